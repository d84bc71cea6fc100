"""The sequence-first tutorial's indexing, pe[:x.size(0)], kept for batch-first input: sequence b of the
batch gets row b of the table at every one of its positions.

expect-fail: ch06_forward
"""
# cell: ch06_positional_encoding_module
class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=5000, dropout=0.0):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        self.register_buffer("pe", sinusoidal_positional_encoding(max_len, d_model))

    def forward(self, x):
        return self.dropout(x + self.pe[: x.size(0)].unsqueeze(1))
