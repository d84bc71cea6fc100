"""Wraps the addition in torch.no_grad() ("the table is not learned, so no gradients"): the values are
right, but no gradient flows back through forward, so the embeddings below it never learn.

expect-fail: ch06_forward
"""
# cell: ch06_positional_encoding_module
class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=5000, dropout=0.0):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("pe", sinusoidal_positional_encoding(max_len, d_model))

    def forward(self, x):
        with torch.no_grad():                                  # the mistake: meant for the table, cuts x off too
            x = x + self.pe[: x.size(1)]
        return self.dropout(x)
