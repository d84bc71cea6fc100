"""Post-LN and pre-LN as two methods, chosen in forward; the stack built with a list
comprehension."""
# cell: ch07_encoder_layer_module
class EncoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, dropout=0.0, norm_first=False):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout)
        self.feed_forward = FeedForward(d_model, d_ff, dropout)
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.dropout1, self.dropout2 = nn.Dropout(dropout), nn.Dropout(dropout)
        self.norm_first = norm_first

    def attend(self, y, mask):
        return self.dropout1(self.self_attn(y, y, y, mask)[0])

    def post_ln(self, x, mask):
        x = self.norm1(x + self.attend(x, mask))
        return self.norm2(x + self.dropout2(self.feed_forward(x)))

    def pre_ln(self, x, mask):
        x = x + self.attend(self.norm1(x), mask)
        return x + self.dropout2(self.feed_forward(self.norm2(x)))

    def forward(self, x, mask=None):
        return self.pre_ln(x, mask) if self.norm_first else self.post_ln(x, mask)

# cell: ch07_encoder_module
class Encoder(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, num_layers, dropout=0.0, norm_first=False):
        super().__init__()
        self.layers = nn.ModuleList(
            [EncoderLayer(d_model, num_heads, d_ff, dropout, norm_first) for _ in range(num_layers)])
        self.norm = nn.LayerNorm(d_model)

    def forward(self, x, mask=None):
        for _, layer in enumerate(self.layers):
            x = layer(x, mask=mask)
        return self.norm(x)
