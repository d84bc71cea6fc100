"""The self-attention sublayer has no residual connection: post-LN computes norm1(drop(attn(x)))
and pre-LN x = drop(attn(norm1(x))), so every token's own embedding is lost after the first sublayer.

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
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.norm_first = norm_first

    def forward(self, x, mask=None):
        if self.norm_first:
            h = self.norm1(x)
            x = self.dropout1(self.self_attn(h, h, h, mask)[0])          # the mistake: no x +
            x = x + self.dropout2(self.feed_forward(self.norm2(x)))
        else:
            x = self.norm1(self.dropout1(self.self_attn(x, x, x, mask)[0]))  # the mistake: no x +
            x = self.norm2(x + self.dropout2(self.feed_forward(x)))
        return x
