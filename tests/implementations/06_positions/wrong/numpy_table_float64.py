"""Builds the table with numpy and returns torch.from_numpy(table): float64, so a float32 batch comes out
of the module as float64.

expect-fail: ch06_table_values, ch06_forward
"""
# cell: ch06_sinusoidal_table
def sinusoidal_positional_encoding(max_len, d_model):
    if d_model % 2:
        raise ValueError("d_model must be even")
    pos = np.arange(max_len)[:, np.newaxis]
    i = np.arange(0, d_model, 2)[np.newaxis, :]
    angles = pos / np.power(10000, i / d_model)
    table = np.zeros((max_len, d_model))
    table[:, 0::2] = np.sin(angles)
    table[:, 1::2] = np.cos(angles)
    return torch.from_numpy(table)
