"""Splits with unflatten and merges with flatten; dropout through F.dropout with the training flag."""
# cell: ch05_multi_head_attention_module
class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0, bias=True):
        super().__init__()
        if d_model % num_heads:
            raise ValueError(f"MultiHeadAttention: d_model={d_model} must be a multiple of num_heads={num_heads}")
        self.num_heads, self.dropout = num_heads, dropout
        for name in ("w_q", "w_k", "w_v", "w_o"):
            setattr(self, name, nn.Linear(d_model, d_model, bias=bias))

    def forward(self, query, key, value, mask=None):
        d_k = query.shape[-1] // self.num_heads
        q = self.w_q(query).unflatten(-1, (self.num_heads, d_k)).transpose(1, 2)   # (batch, heads, L_q, d_k)
        k = self.w_k(key).unflatten(-1, (self.num_heads, d_k)).transpose(1, 2)     # (batch, heads, L_k, d_k)
        v = self.w_v(value).unflatten(-1, (self.num_heads, d_k)).transpose(1, 2)
        _, weights = scaled_dot_product_attention(q, k, v, mask=mask)
        dropped = F.dropout(weights, p=self.dropout, training=self.training)
        heads = (dropped @ v).transpose(1, 2).flatten(start_dim=2)                 # (batch, L_q, d_model)
        return self.w_o(heads), weights
