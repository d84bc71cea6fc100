"""Creates the final LayerNorm but never applies it (post-LN layers already end with a norm, so it
looks redundant; torch.nn.Transformer's encoder has it all the same).

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
            x = layer(x, mask)
        return x                                                   # the mistake: self.norm never used
