"""Pre- and post-LN written as one sequence of (norm, sublayer) pairs; the decoder runs its layers with
functools.reduce; the embedding scale is a precomputed float."""
# cell: ch08_decoder_layer_module
class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, dropout=0.0, norm_first=False):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout=dropout)
        self.cross_attn = MultiHeadAttention(d_model, num_heads, dropout=dropout)
        self.feed_forward = FeedForward(d_model, d_ff, dropout=dropout)
        self.norm1 = nn.LayerNorm(d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.norm3 = nn.LayerNorm(d_model)
        self.dropouts = nn.ModuleList(nn.Dropout(dropout) for _ in range(3))
        self.pre = norm_first

    def forward(self, x, memory, tgt_mask=None, memory_mask=None):
        steps = [
            (self.norm1, lambda h: self.self_attn(h, h, h, tgt_mask)[0]),
            (self.norm2, lambda h: self.cross_attn(h, memory, memory, memory_mask)[0]),
            (self.norm3, lambda h: self.feed_forward(h)),
        ]
        for (norm, step), drop in zip(steps, self.dropouts):
            if self.pre:
                x = x + drop(step(norm(x)))
            else:
                x = norm(x + drop(step(x)))
        return x

# cell: ch08_decoder_module
import functools


class Decoder(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, num_layers, dropout=0.0, norm_first=False):
        super().__init__()
        self.layers = nn.ModuleList()
        while len(self.layers) < num_layers:
            self.layers.append(DecoderLayer(d_model, num_heads, d_ff, dropout, norm_first))
        self.norm = nn.LayerNorm(d_model)

    def forward(self, x, memory, tgt_mask=None, memory_mask=None):
        out = functools.reduce(lambda h, layer: layer(h, memory, tgt_mask, memory_mask), self.layers, x)
        return self.norm(out)

# cell: ch08_transformer_module
class Transformer(nn.Module):
    def __init__(self, src_vocab, tgt_vocab, d_model=512, num_heads=8, num_layers=6, d_ff=2048,
                 dropout=0.1, max_len=5000):
        super().__init__()
        self.src_embed = nn.Embedding(src_vocab, d_model)
        self.tgt_embed = nn.Embedding(tgt_vocab, d_model)
        self.pos_encoding = PositionalEncoding(d_model, max_len, dropout)
        self.encoder = Encoder(d_model, num_heads, d_ff, num_layers, dropout)
        self.decoder = Decoder(d_model, num_heads, d_ff, num_layers, dropout)
        self.generator = nn.Linear(d_model, tgt_vocab)
        self.emb_scale = math.sqrt(d_model)

    def encode(self, src, src_mask=None):
        return self.encoder(self.pos_encoding(self.src_embed(src) * self.emb_scale), src_mask)

    def decode(self, tgt, memory, src_mask=None, tgt_mask=None):
        return self.decoder(self.pos_encoding(self.tgt_embed(tgt) * self.emb_scale), memory, tgt_mask, src_mask)

    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        logits = self.generator(self.decode(tgt, self.encode(src, src_mask), src_mask, tgt_mask))
        return logits
