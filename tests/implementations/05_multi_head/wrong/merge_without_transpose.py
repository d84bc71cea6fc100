"""Merges the heads with a reshape straight from (batch, heads, L_q, d_k) to (batch, L_q, d_model),
without moving the heads back after the sequence first: every output row mixes the features of
several positions. No error, the shape is right.

expect-fail: ch05_self_attention, ch05_cross_attention, ch05_masks, ch05_dropout, ch05_gradients
"""
# cell: ch05_multi_head_attention_module
class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0, bias=True):
        super().__init__()
        if d_model % num_heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by num_heads ({num_heads})")
        self.h, self.d_k = num_heads, d_model // num_heads
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, query, key, value, mask=None):
        batch = query.size(0)
        q = self.w_q(query).view(batch, -1, self.h, self.d_k).transpose(1, 2)
        k = self.w_k(key).view(batch, -1, self.h, self.d_k).transpose(1, 2)
        v = self.w_v(value).view(batch, -1, self.h, self.d_k).transpose(1, 2)
        _, weights = scaled_dot_product_attention(q, k, v, mask)
        x = self.dropout(weights) @ v                      # (batch, heads, L_q, d_k)
        x = x.reshape(batch, -1, self.h * self.d_k)        # the mistake: no transpose(1, 2) first
        return self.w_o(x), weights
