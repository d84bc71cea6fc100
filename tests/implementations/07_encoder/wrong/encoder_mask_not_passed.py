"""The Encoder takes a mask and calls its layers without it.

expect-fail: ch07_encoder, ch07_gradients
"""
# cell: ch07_encoder_module
class Encoder(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, num_layers, dropout=0.0, norm_first=False):
        super().__init__()
        self.layers = nn.ModuleList(
            [EncoderLayer(d_model, num_heads, d_ff, dropout, norm_first) for _ in range(num_layers)])
        self.norm = nn.LayerNorm(d_model)

    def forward(self, x, mask=None):
        for layer in self.layers:
            x = layer(x)                                           # the mistake: mask dropped
        return self.norm(x)
