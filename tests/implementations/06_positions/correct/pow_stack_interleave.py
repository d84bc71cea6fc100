"""torch.pow for the frequencies, interleaving by stacking (sin, cos) on a last axis and flattening; the
module slices with a broadcast view."""
# cell: ch06_sinusoidal_table
def sinusoidal_positional_encoding(max_len, d_model):
    if d_model % 2 != 0:
        raise ValueError(f"odd d_model ({d_model}) is not supported: sines and cosines are paired")
    exponents = torch.arange(0, d_model, 2, dtype=torch.float64) / d_model        # 2i / d_model
    omega = torch.pow(torch.tensor(10000.0, dtype=torch.float64), -exponents)      # (d_model/2,)
    angles = torch.outer(torch.arange(max_len, dtype=torch.float64), omega)        # (max_len, d_model/2)
    return torch.stack((angles.sin(), angles.cos()), dim=-1).reshape(max_len, d_model).to(torch.float32)

# cell: ch06_positional_encoding_module
class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=5000, dropout=0.0):
        super().__init__()
        table = sinusoidal_positional_encoding(max_len, d_model)
        self.register_buffer("pe", table)
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, x):
        batch, length, width = x.shape
        return self.dropout(x + self.pe[None, :length, :].expand(batch, length, width))
