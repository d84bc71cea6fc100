"""Names the residual stream and the sublayer outputs explicitly, one nn.Dropout shared by both
residual branches (a dropout module has no state), the stack built from a generator."""
# cell: ch07_feed_forward_module
class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.0):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.act = nn.ReLU()
        self.drop = nn.Dropout(dropout)
        self.linear2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.linear2(self.drop(self.act(self.linear1(x))))

# cell: ch07_encoder_layer_module
class EncoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, dropout=0.0, norm_first=False):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout=dropout)
        self.feed_forward = FeedForward(d_model, d_ff, dropout=dropout)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.residual_drop = nn.Dropout(dropout)
        self.norm_first = norm_first

    def forward(self, x, mask=None):
        stream = x
        attn_in = self.norm1(stream) if self.norm_first else stream
        attn_out, _ = self.self_attn(attn_in, attn_in, attn_in, mask)
        stream = stream + self.residual_drop(attn_out)
        if not self.norm_first:
            stream = self.norm1(stream)
        ff_in = self.norm2(stream) if self.norm_first else stream
        stream = stream + self.residual_drop(self.feed_forward(ff_in))
        if not self.norm_first:
            stream = self.norm2(stream)
        return stream

# cell: ch07_encoder_module
class Encoder(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, num_layers, dropout=0.0, norm_first=False):
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(d_model, num_heads, d_ff, dropout, norm_first) for _ in range(num_layers))
        self.norm = nn.LayerNorm(d_model)

    def forward(self, x, mask=None):
        h = x
        for layer in self.layers:
            h = layer(h, mask)
        return self.norm(h)
