"""No check of its own: numpy's broadcasting error is the ValueError. Writing 3 cosine columns into the 2 odd
columns of d_model = 5 fails with "could not broadcast", so both self-check calls raise ValueError; but with
d_model = 1 the one cosine column broadcasts into zero columns, and a one-column table of sines comes back.

expect-fail: ch06_odd_d_model
"""
# cell: ch06_sinusoidal_table
def sinusoidal_positional_encoding(max_len, d_model):
    position = np.arange(max_len, dtype=np.float64)[:, None]                # (max_len, 1)
    omega = 10000.0 ** (-np.arange(0, d_model, 2) / d_model)               # (ceil(d_model / 2),)
    table = np.zeros((max_len, d_model))
    table[:, 0::2] = np.sin(position * omega)
    table[:, 1::2] = np.cos(position * omega)                              # raises ValueError for d_model = 3, 5, 7, ...
    return torch.from_numpy(table).float()
