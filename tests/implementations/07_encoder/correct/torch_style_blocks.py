"""torch.nn.TransformerEncoderLayer's own structure: _sa_block and _ff_block methods, F.dropout with
training=self.training, clamp(min=0) for the ReLU."""
# cell: ch07_feed_forward_module
class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.0):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.p = dropout

    def forward(self, x):
        h = self.linear1(x).clamp(min=0)
        h = F.dropout(h, p=self.p, training=self.training)
        return self.linear2(h)

# cell: ch07_encoder_layer_module
class EncoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, dropout=0.0, norm_first=False):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout=dropout)
        self.feed_forward = FeedForward(d_model, d_ff, dropout=dropout)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.p = dropout
        self.norm_first = norm_first

    def _sa_block(self, x, mask):
        out, _ = self.self_attn(x, x, x, mask=mask)
        return F.dropout(out, p=self.p, training=self.training)

    def _ff_block(self, x):
        return F.dropout(self.feed_forward(x), p=self.p, training=self.training)

    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), mask)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, mask))
            x = self.norm2(x + self._ff_block(x))
        return x

# cell: ch07_encoder_module
class Encoder(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, num_layers, dropout=0.0, norm_first=False):
        super().__init__()
        self.layers = nn.ModuleList()
        for _ in range(num_layers):
            self.layers.append(EncoderLayer(d_model, num_heads, d_ff, dropout=dropout, norm_first=norm_first))
        self.norm = nn.LayerNorm(d_model)

    def forward(self, x, mask=None):
        out = x
        for i in range(len(self.layers)):
            out = self.layers[i](out, mask=mask)
        return self.norm(out)
