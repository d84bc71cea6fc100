"""Keeps the table as a plain attribute (self.pe = table) and moves it to x's device at every call: it
is not a buffer, so it is missing from state_dict() and does not follow .double() or .to(device).

expect-fail: ch06_buffer
"""
# cell: ch06_positional_encoding_module
class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=5000, dropout=0.0):
        super().__init__()
        self.pe = sinusoidal_positional_encoding(max_len, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.dropout(x + self.pe[: x.size(1)].to(x.device))
