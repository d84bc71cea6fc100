"""The widely copied `dim // dim_model` exponent: every column index is smaller than d_model, so the
integer division is 0, the exponent is 0 and every column has frequency 1 (only two distinct columns).

expect-fail: ch06_table_values, ch06_forward
"""
# cell: ch06_sinusoidal_table
def sinusoidal_positional_encoding(max_len, d_model):
    if d_model % 2 != 0:
        raise ValueError("d_model must be even")
    pos = torch.arange(max_len, dtype=torch.float).reshape(-1, 1)
    dim = torch.arange(d_model, dtype=torch.float).reshape(1, -1)
    phase = pos / 1e4 ** (dim // d_model)
    return torch.where(dim.long() % 2 == 0, torch.sin(phase), torch.cos(phase))
