"""The feed-forward sublayer has no residual connection: x = norm2(drop(ff(x))) (post-LN) and
x = drop(ff(norm2(x))) (pre-LN).

expect-fail: ch07_post_ln, ch07_pre_ln, ch07_padding_mask, ch07_dropout, ch07_encoder, ch07_gradients
"""
# cell: ch07_encoder_layer_module
class EncoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, dropout=0.0, norm_first=False):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout)
        self.feed_forward = FeedForward(d_model, d_ff, dropout)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.drop = nn.Dropout(dropout)
        self.norm_first = norm_first

    def forward(self, x, mask=None):
        if self.norm_first:
            h = self.norm1(x)
            x = x + self.drop(self.self_attn(h, h, h, mask)[0])
            return self.drop(self.feed_forward(self.norm2(x)))      # the mistake: no x +
        x = self.norm1(x + self.drop(self.self_attn(x, x, x, mask)[0]))
        return self.norm2(self.drop(self.feed_forward(x)))          # the mistake: no x +
