"""Reshapes every mask to (batch, 1, 1, -1), assuming it is a padding mask: a padding mask passes
unchanged, but a causal (L, L) mask or a (batch, 1, L, L) mask is scrambled or rejected.

expect-fail: ch07_padding_mask
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
        if mask is not None:
            mask = mask.reshape(x.size(0), 1, 1, -1)                 # the mistake: only padding masks survive
        if self.norm_first:
            h = self.norm1(x)
            x = x + self.dropout1(self.self_attn(h, h, h, mask)[0])
            return x + self.dropout2(self.feed_forward(self.norm2(x)))
        x = self.norm1(x + self.dropout1(self.self_attn(x, x, x, mask)[0]))
        return self.norm2(x + self.dropout2(self.feed_forward(x)))
