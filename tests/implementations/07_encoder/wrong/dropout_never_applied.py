"""The dropout argument is accepted and never used: no dropout in the sublayers nor on their outputs,
so training mode computes exactly what eval() mode computes.

expect-fail: ch07_dropout
"""
# cell: ch07_encoder_layer_module
class EncoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, dropout=0.0, norm_first=False):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads)    # the mistake: dropout not passed on
        self.feed_forward = FeedForward(d_model, d_ff)             # nor here, and no dropout of its own
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.norm_first = norm_first

    def forward(self, x, mask=None):
        if self.norm_first:
            h = self.norm1(x)
            x = x + self.self_attn(h, h, h, mask)[0]
            return x + self.feed_forward(self.norm2(x))
        x = self.norm1(x + self.self_attn(x, x, x, mask)[0])
        return self.norm2(x + self.feed_forward(x))
