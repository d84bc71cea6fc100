"""One DecoderLayer repeated num_layers times ([layer] * num_layers): the layers share their weights.

expect-fail: ch08_decoder, ch08_transformer_structure, ch08_transformer_vs_torch
"""
# cell: ch08_decoder_module
class Decoder(nn.Module):
    """num_layers independent DecoderLayers (`layers`), then a final LayerNorm (`norm`)."""

    def __init__(self, d_model, num_heads, d_ff, num_layers, dropout=0.0, norm_first=False):
        super().__init__()
        layer = DecoderLayer(d_model, num_heads, d_ff, dropout, norm_first)
        self.layers = nn.ModuleList([layer] * num_layers)
        self.norm = nn.LayerNorm(normalized_shape=d_model)

    def forward(self, x, memory, tgt_mask=None, memory_mask=None):
        """x: (batch, L_tgt, d_model), memory: (batch, L_src, d_model) -> (batch, L_tgt, d_model)."""
        for index in range(len(self.layers)):
            x = self.layers[index](x, memory, tgt_mask, memory_mask)
        return self.norm(x)
