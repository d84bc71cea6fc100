"""All the sines first, then all the cosines ([sin | cos], as tensor2tensor lays it out): the same
information, but not the interleaved table of the contract and of the paper's formula.

expect-fail: ch06_table_values, ch06_forward
"""
# cell: ch06_sinusoidal_table
def sinusoidal_positional_encoding(max_len, d_model):
    if d_model % 2:
        raise ValueError("d_model must be even")
    position = torch.arange(max_len, dtype=torch.float32)[:, None]
    freqs = 10000.0 ** (-torch.arange(0, d_model, 2, dtype=torch.float32) / d_model)
    angles = position * freqs
    return torch.cat([torch.sin(angles), torch.cos(angles)], dim=1)
