"""Python loops over positions and pairs with math.sin/math.cos, the list turned into a tensor and
registered as a buffer."""
# cell: ch06_sinusoidal_table
def sinusoidal_positional_encoding(max_len, d_model):
    if d_model % 2:
        raise ValueError("d_model must be an even number")
    rows = []
    for pos in range(max_len):
        row = []
        for i in range(d_model // 2):
            angle = pos / (10000 ** (2 * i / d_model))
            row += [math.sin(angle), math.cos(angle)]
        rows.append(row)
    return torch.tensor(rows, dtype=torch.float32).reshape(max_len, d_model)

# cell: ch06_positional_encoding_module
class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=5000, dropout=0.0):
        super().__init__()
        self.register_buffer("pe", sinusoidal_positional_encoding(max_len, d_model), persistent=True)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        positions = self.pe.narrow(0, 0, x.size(1))   # (L, d_model)
        return self.dropout(torch.add(x, positions))
