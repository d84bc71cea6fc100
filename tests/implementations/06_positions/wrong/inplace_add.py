"""x += pe: the right values, but the caller's tensor is modified (and a tensor that requires
gradients cannot be modified in place).

expect-fail: ch06_forward
"""
# cell: ch06_positional_encoding_module
class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=5000, dropout=0.0):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("pe", sinusoidal_positional_encoding(max_len, d_model))

    def forward(self, x):
        x += self.pe[: x.size(1)]
        return self.dropout(x)
