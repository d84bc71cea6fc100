"""Applies dropout to the embeddings and then adds the table: dropped entries keep their position
value, and the table is not rescaled by 1/(1-p).

expect-fail: ch06_dropout
"""
# cell: ch06_positional_encoding_module
class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=5000, dropout=0.0):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("pe", sinusoidal_positional_encoding(max_len, d_model))

    def forward(self, x):
        return self.dropout(x) + self.pe[: x.size(1)]
