"""Handles an odd d_model silently (builds d_model + 1 columns and drops the last) instead of raising the
ValueError the exercise asks for.

expect-fail: ch06_odd_d_model
"""
# cell: ch06_sinusoidal_table
def sinusoidal_positional_encoding(max_len, d_model):
    position = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)
    freqs = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32) * (-math.log(10000.0) / d_model))
    angles = position * freqs
    return torch.stack([torch.sin(angles), torch.cos(angles)], dim=-1).flatten(1)[:, :d_model]
