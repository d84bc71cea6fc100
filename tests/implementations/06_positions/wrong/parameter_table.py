"""Stores the table as nn.Parameter(table, requires_grad=False): it moves and is saved, but it is a
parameter (an optimiser given model.parameters() gets it), not a buffer.

expect-fail: ch06_buffer
"""
# cell: ch06_positional_encoding_module
class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=5000, dropout=0.0):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.pe = nn.Parameter(sinusoidal_positional_encoding(max_len, d_model), requires_grad=False)

    def forward(self, x):
        return self.dropout(x + self.pe[: x.size(1)])
