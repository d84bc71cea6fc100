"""norm2 used after the feed-forward network and norm3 after cross-attention (the order of the
attributes differs from torch's): invisible with default LayerNorms, wrong once weights are copied.

expect-fail: ch08_decoder, ch08_decoder_layer_masks, ch08_decoder_layer_vs_torch, ch08_transformer_vs_torch
"""
# cell: ch08_decoder_layer_module
class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention over the encoder's memory, feed-forward network:
    three sublayers, each inside a residual connection with its LayerNorm (norm1, norm2, norm3)."""

    def __init__(self, d_model, num_heads, d_ff, dropout=0.0, norm_first=False):
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout)   # queries, keys, values: the target
        self.cross_attn = MultiHeadAttention(d_model, num_heads, dropout)  # queries: the target; keys, values: memory
        self.feed_forward = FeedForward(d_model, d_ff, dropout)
        self.norm1 = nn.LayerNorm(d_model)  # goes with self-attention
        self.norm2 = nn.LayerNorm(d_model)  # goes with cross-attention
        self.norm3 = nn.LayerNorm(d_model)  # goes with the feed-forward network
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.dropout3 = nn.Dropout(dropout)
        self.pre_ln = bool(norm_first)  # True: norm_first (pre-LN); False: the paper's post-LN

    def forward(self, x, memory, tgt_mask=None, memory_mask=None):
        """x: (batch, L_tgt, d_model); memory: (batch, L_src, d_model); tgt_mask broadcastable to
        (batch, heads, L_tgt, L_tgt), memory_mask to (batch, heads, L_tgt, L_src); True = may attend,
        None = no mask. Returns (batch, L_tgt, d_model)."""
        if not self.pre_ln:  # post-LN: normalise after each residual sum
            x = self.norm1(x + self.dropout1(self.self_attn(x, x, x, tgt_mask)[0]))
            x = self.norm3(x + self.dropout2(self.cross_attn(x, memory, memory, memory_mask)[0]))
            x = self.norm2(x + self.dropout3(self.feed_forward(x)))
            return x
        h = self.norm1(x)  # pre-LN: normalise each sublayer's input, keep the residual path clean
        x = x + self.dropout1(self.self_attn(h, h, h, tgt_mask)[0])
        h = self.norm3(x)  # only the query side is normalised; the memory is used as it is
        x = x + self.dropout2(self.cross_attn(h, memory, memory, memory_mask)[0])
        x = x + self.dropout3(self.feed_forward(self.norm2(x)))
        return x  # (batch, L_tgt, d_model): one row per target position
