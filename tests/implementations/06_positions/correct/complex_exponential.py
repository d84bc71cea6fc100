"""Each (sin, cos) pair as one complex number e^{i p omega}: view_as_real gives (cos, sin), flipped to
(sin, cos). The odd-d_model check lives in the module too."""
# cell: ch06_sinusoidal_table
def sinusoidal_positional_encoding(max_len, d_model):
    if d_model % 2 != 0:
        raise ValueError(f"d_model must be even, got {d_model}")
    omega = 10000.0 ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    angles = torch.arange(max_len, dtype=torch.float64)[:, None] * omega[None, :]
    unit = torch.polar(torch.ones_like(angles), angles)             # cos + i sin
    pairs = torch.view_as_real(unit).flip(-1)                        # (max_len, d_model/2, 2): (sin, cos)
    return pairs.reshape(max_len, d_model).float()

# cell: ch06_positional_encoding_module
class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=5000, dropout=0.0):
        if d_model % 2 != 0:
            raise ValueError(f"PositionalEncoding needs an even d_model, got {d_model}")
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("pe", sinusoidal_positional_encoding(max_len, d_model))

    def forward(self, x):
        return self.dropout(x + self.pe[: x.size(-2)])
