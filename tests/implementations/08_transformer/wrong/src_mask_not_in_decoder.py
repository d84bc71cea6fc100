"""src_mask masks the encoder only: decode does not pass it to the decoder as the memory mask, so
cross-attention reads the source's padding.

expect-fail: ch08_causality_and_padding, ch08_transformer_vs_torch
"""
# cell: ch08_transformer_module
class Transformer(nn.Module):
    """The encoder-decoder Transformer: token ids in, logits over the target vocabulary out."""

    def __init__(self, src_vocab, tgt_vocab, d_model=512, num_heads=8, num_layers=6, d_ff=2048,
                 dropout=0.1, max_len=5000):
        super().__init__()
        self.d_model = d_model
        self.src_embed = nn.Embedding(src_vocab, d_model)
        self.tgt_embed = nn.Embedding(tgt_vocab, d_model)
        self.pos_encoding = PositionalEncoding(d_model, max_len, dropout)  # one table for both sides
        self.encoder = Encoder(d_model, num_heads, d_ff, num_layers, dropout)
        self.decoder = Decoder(d_model, num_heads, d_ff, num_layers, dropout)
        self.generator = nn.Linear(d_model, tgt_vocab)  # features -> one score per target token

    def encode(self, src, src_mask=None):
        """src: (batch, L_src) token ids; src_mask: (batch, 1, 1, L_src). Returns memory (batch, L_src, d_model)."""
        src_vectors = self.src_embed(src) * math.sqrt(self.d_model)  # (batch, L_src, d_model)
        return self.encoder(self.pos_encoding(src_vectors), src_mask)

    def decode(self, tgt, memory, src_mask=None, tgt_mask=None):
        """tgt: (batch, L_tgt) token ids; memory: (batch, L_src, d_model). Returns (batch, L_tgt, d_model)."""
        tgt_vectors = self.tgt_embed(tgt) * math.sqrt(self.d_model)  # (batch, L_tgt, d_model)
        return self.decoder(self.pos_encoding(tgt_vectors), memory, tgt_mask)

    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        """Logits (batch, L_tgt, tgt_vocab): no softmax."""
        memory = self.encode(src, src_mask)                       # (batch, L_src, d_model)
        features = self.decode(tgt, memory, src_mask, tgt_mask)   # (batch, L_tgt, d_model)
        return self.generator(features)                           # (batch, L_tgt, tgt_vocab)
