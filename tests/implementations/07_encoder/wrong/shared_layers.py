"""nn.ModuleList([EncoderLayer(...)] * num_layers): one layer object repeated, so the whole stack has
the weights of a single layer.

expect-fail: ch07_encoder, ch07_gradients
"""
# cell: ch07_encoder_module
class Encoder(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, num_layers, dropout=0.0, norm_first=False):
        super().__init__()
        layer = EncoderLayer(d_model, num_heads, d_ff, dropout, norm_first)
        self.layers = nn.ModuleList([layer] * num_layers)          # the mistake
        self.norm = nn.LayerNorm(d_model)

    def forward(self, x, mask=None):
        for layer in self.layers:
            x = layer(x, mask)
        return self.norm(x)
