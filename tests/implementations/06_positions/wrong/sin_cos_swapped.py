"""Cosines in the even columns and sines in the odd ones (row 0 is [1, 0, 1, 0, ...]).

expect-fail: ch06_table_values, ch06_forward
"""
# cell: ch06_sinusoidal_table
def sinusoidal_positional_encoding(max_len, d_model):
    if d_model % 2:
        raise ValueError(f"d_model must be even, got {d_model}")
    position = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
    pe = torch.zeros(max_len, d_model)
    pe[:, 0::2] = torch.cos(position * div_term)
    pe[:, 1::2] = torch.sin(position * div_term)
    return pe
