"""F.dropout(x, p) without training=self.training: F.dropout defaults to training=True, so dropout is
active in eval() mode too.

expect-fail: ch06_dropout
"""
# cell: ch06_positional_encoding_module
import torch.nn.functional as F


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=5000, dropout=0.0):
        super().__init__()
        self.p = dropout
        self.register_buffer("pe", sinusoidal_positional_encoding(max_len, d_model))

    def forward(self, x):
        return F.dropout(x + self.pe[: x.size(1)], self.p)
