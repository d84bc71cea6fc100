"""register_buffer(..., persistent=False): the table moves with the module but is left out of
state_dict(), which the exercise requires it to be in.

expect-fail: ch06_buffer
"""
# cell: ch06_positional_encoding_module
class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=5000, dropout=0.0):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("pe", sinusoidal_positional_encoding(max_len, d_model), persistent=False)

    def forward(self, x):
        return self.dropout(x + self.pe[: x.size(1)])
