"""Passes dropout on to the sublayers (attention weights, feed-forward hidden units) and forgets the
dropout on each sublayer's output before the residual add: training mode is still random, but the
residual dropout of the paper (and of torch's layer) is missing.

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
        self.norm_first = norm_first

    def forward(self, x, mask=None):
        if self.norm_first:
            h = self.norm1(x)
            x = x + self.self_attn(h, h, h, mask)[0]                # the mistake: no dropout on the sublayer output
            return x + self.feed_forward(self.norm2(x))
        x = self.norm1(x + self.self_attn(x, x, x, mask)[0])
        return self.norm2(x + self.feed_forward(x))
