"""The masks normalised once per call (a boolean mask kept as it is, None left as None) and passed by keyword;
the Transformer builds its modules in a different order and scales the embeddings with torch.sqrt."""
# cell: ch08_decoder_layer_module
class DecoderLayer(nn.Module):
    def __init__(self, d_model, num_heads, d_ff, dropout=0.0, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.norm1 = nn.LayerNorm(d_model)
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout=dropout)
        self.norm2 = nn.LayerNorm(d_model)
        self.cross_attn = MultiHeadAttention(d_model, num_heads, dropout=dropout)
        self.norm3 = nn.LayerNorm(d_model)
        self.feed_forward = FeedForward(d_model, d_ff, dropout=dropout)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, memory, tgt_mask=None, memory_mask=None):
        if tgt_mask is not None:
            tgt_mask = tgt_mask.bool()
        if memory_mask is not None:
            memory_mask = memory_mask.bool()
        if self.norm_first:
            q = self.norm1(x)
            x = x + self.dropout(self.self_attn(query=q, key=q, value=q, mask=tgt_mask)[0])
            q = self.norm2(x)
            x = x + self.dropout(self.cross_attn(query=q, key=memory, value=memory, mask=memory_mask)[0])
            return x + self.dropout(self.feed_forward(self.norm3(x)))
        a = self.self_attn(query=x, key=x, value=x, mask=tgt_mask)[0]
        x = self.norm1(x + self.dropout(a))
        c = self.cross_attn(query=x, key=memory, value=memory, mask=memory_mask)[0]
        x = self.norm2(x + self.dropout(c))
        return self.norm3(x + self.dropout(self.feed_forward(x)))

# cell: ch08_transformer_module
class Transformer(nn.Module):
    def __init__(self, src_vocab, tgt_vocab, d_model=512, num_heads=8, num_layers=6, d_ff=2048,
                 dropout=0.1, max_len=5000):
        super().__init__()
        self.encoder = Encoder(d_model, num_heads, d_ff, num_layers, dropout=dropout)
        self.decoder = Decoder(d_model, num_heads, d_ff, num_layers, dropout=dropout)
        self.src_embed = nn.Embedding(num_embeddings=src_vocab, embedding_dim=d_model)
        self.tgt_embed = nn.Embedding(num_embeddings=tgt_vocab, embedding_dim=d_model)
        self.pos_encoding = PositionalEncoding(d_model, max_len=max_len, dropout=dropout)
        self.generator = nn.Linear(in_features=d_model, out_features=tgt_vocab)

    def _scale(self, vectors):
        return vectors * torch.sqrt(torch.tensor(float(vectors.shape[-1]), dtype=vectors.dtype, device=vectors.device))

    def encode(self, src, src_mask=None):
        return self.encoder(self.pos_encoding(self._scale(self.src_embed(src))), src_mask)

    def decode(self, tgt, memory, src_mask=None, tgt_mask=None):
        return self.decoder(self.pos_encoding(self._scale(self.tgt_embed(tgt))), memory,
                            tgt_mask=tgt_mask, memory_mask=src_mask)

    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        memory = self.encode(src, src_mask=src_mask)
        return self.generator(self.decode(tgt, memory, src_mask=src_mask, tgt_mask=tgt_mask))
