"""The Annotated Transformer's shape: a SublayerConnection module (residual, dropout and the norm in
the configured order) and `clones` by copy.deepcopy for the stack."""
# cell: ch07_feed_forward_module
class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.0):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.linear2(self.dropout(self.linear1(x).relu()))

# cell: ch07_encoder_layer_module
class SublayerConnection(nn.Module):
    """Residual connection around one sublayer; the LayerNorm is passed in so that it keeps its name."""

    def __init__(self, dropout, norm_first):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.norm_first = norm_first

    def forward(self, x, norm, sublayer):
        if self.norm_first:
            return x + self.dropout(sublayer(norm(x)))
        return norm(x + self.dropout(sublayer(x)))


class EncoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, dropout=0.0, norm_first=False):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout)
        self.feed_forward = FeedForward(d_model, d_ff, dropout)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.sublayer = nn.ModuleList([SublayerConnection(dropout, norm_first) for _ in range(2)])

    def forward(self, x, mask=None):
        x = self.sublayer[0](x, self.norm1, lambda y: self.self_attn(y, y, y, mask)[0])
        return self.sublayer[1](x, self.norm2, self.feed_forward)

# cell: ch07_encoder_module
import copy


def clones(module, n):
    """n independent deep copies of module."""
    return nn.ModuleList([copy.deepcopy(module) for _ in range(n)])


class Encoder(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, num_layers, dropout=0.0, norm_first=False):
        super().__init__()
        self.layers = clones(EncoderLayer(d_model, num_heads, d_ff, dropout, norm_first), num_layers)
        self.norm = nn.LayerNorm(d_model)

    def forward(self, x, mask=None):
        for layer in self.layers:
            x = layer(x, mask)
        return self.norm(x)
