"""The Annotated Transformer's style: one residual helper for the three sublayers, the decoder's layers cloned
with copy.deepcopy (independent copies), and an `embed` helper scaling by d_model ** 0.5."""
# cell: ch08_decoder_layer_module
class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, dropout=0.0, norm_first=False):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout=dropout)
        self.cross_attn = MultiHeadAttention(d_model, num_heads, dropout=dropout)
        self.feed_forward = FeedForward(d_model, d_ff, dropout=dropout)
        self.norm1, self.norm2, self.norm3 = (nn.LayerNorm(d_model) for _ in range(3))
        self.drop = nn.Dropout(dropout)
        self.norm_first = norm_first

    def residual(self, x, norm, fn):
        if self.norm_first:
            return x + self.drop(fn(norm(x)))
        return norm(x + self.drop(fn(x)))

    def forward(self, x, memory, tgt_mask=None, memory_mask=None):
        x = self.residual(x, self.norm1, lambda t: self.self_attn(t, t, t, mask=tgt_mask)[0])
        x = self.residual(x, self.norm2, lambda t: self.cross_attn(t, memory, memory, mask=memory_mask)[0])
        return self.residual(x, self.norm3, self.feed_forward)

# cell: ch08_decoder_module
import copy


class Decoder(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, num_layers, dropout=0.0, norm_first=False):
        super().__init__()
        layer = DecoderLayer(d_model, num_heads, d_ff, dropout=dropout, norm_first=norm_first)
        self.layers = nn.ModuleList([copy.deepcopy(layer) for _ in range(num_layers)])
        self.norm = nn.LayerNorm(d_model)

    def forward(self, x, memory, tgt_mask=None, memory_mask=None):
        for layer in self.layers:
            x = layer(x, memory, tgt_mask=tgt_mask, memory_mask=memory_mask)
        return self.norm(x)

# cell: ch08_transformer_module
class Transformer(nn.Module):
    def __init__(self, src_vocab, tgt_vocab, d_model=512, num_heads=8, num_layers=6, d_ff=2048,
                 dropout=0.1, max_len=5000):
        super().__init__()
        self.src_embed = nn.Embedding(src_vocab, d_model)
        self.tgt_embed = nn.Embedding(tgt_vocab, d_model)
        self.pos_encoding = PositionalEncoding(d_model, max_len=max_len, dropout=dropout)
        self.encoder = Encoder(d_model, num_heads, d_ff, num_layers, dropout=dropout)
        self.decoder = Decoder(d_model, num_heads, d_ff, num_layers, dropout=dropout)
        self.generator = nn.Linear(d_model, tgt_vocab)
        self.scale = d_model ** 0.5

    def embed(self, table, tokens):
        return self.pos_encoding(table(tokens) * self.scale)

    def encode(self, src, src_mask=None):
        return self.encoder(self.embed(self.src_embed, src), mask=src_mask)

    def decode(self, tgt, memory, src_mask=None, tgt_mask=None):
        return self.decoder(self.embed(self.tgt_embed, tgt), memory, tgt_mask=tgt_mask, memory_mask=src_mask)

    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        return self.generator(self.decode(tgt, self.encode(src, src_mask), src_mask, tgt_mask))
