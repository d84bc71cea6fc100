"""Exponent i/d_model with the pair index i, instead of 2i/d_model: the wavelengths only reach
2*pi*100 instead of 2*pi*10000.

expect-fail: ch06_table_values, ch06_forward
"""
# cell: ch06_sinusoidal_table
def sinusoidal_positional_encoding(max_len, d_model):
    if d_model % 2 != 0:
        raise ValueError("d_model must be even")
    position = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)
    i = torch.arange(d_model // 2, dtype=torch.float32)
    angles = position / 10000.0 ** (i / d_model)
    pe = torch.zeros(max_len, d_model)
    pe[:, 0::2] = torch.sin(angles)
    pe[:, 1::2] = torch.cos(angles)
    return pe
