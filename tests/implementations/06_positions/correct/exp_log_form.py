"""The Annotated Transformer's form, exp(2i * -log(10000) / d_model), computed in float32, with the
odd-d_model check; the module builds the table through the function."""
# cell: ch06_sinusoidal_table
def sinusoidal_positional_encoding(max_len, d_model):
    if d_model % 2 != 0:
        raise ValueError("d_model must be even: the sines and cosines come in pairs")
    pe = torch.zeros(max_len, d_model)
    position = torch.arange(0, max_len).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d_model, 2) * -(math.log(10000.0) / d_model))
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe

# cell: ch06_positional_encoding_module
class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=5000, dropout=0.0):
        super().__init__()
        self.drop = nn.Dropout(p=dropout)
        pe = sinusoidal_positional_encoding(max_len, d_model)
        self.register_buffer("pe", pe)

    def forward(self, x):
        out = x + self.pe[: x.size(1), :].unsqueeze(0)
        return self.drop(out)
