"""Drops the residual sum instead of the sublayer's output: norm(dropout(x + sublayer(x))) (and
x = dropout(x + sublayer(norm(x))) in pre-LN). Training mode is random and eval() mode is right, but
dropout now also zeroes features of the residual path x, which is meant to carry x through untouched.

expect-fail: ch07_dropout
"""
# cell: ch07_encoder_layer_module
class EncoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, dropout=0.0, norm_first=False):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout=dropout)
        self.feed_forward = FeedForward(d_model, d_ff, dropout=dropout)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.norm_first = norm_first

    def forward(self, x, mask=None):
        if self.norm_first:
            h = self.norm1(x)
            x = self.dropout1(x + self.self_attn(h, h, h, mask)[0])    # the mistake: dropout after the add
            return self.dropout2(x + self.feed_forward(self.norm2(x)))
        x = self.norm1(self.dropout1(x + self.self_attn(x, x, x, mask)[0]))
        return self.norm2(self.dropout2(x + self.feed_forward(x)))
