"""Splits into heads with a view straight to (batch, heads, L, d_k), without the transpose: the
"heads" are then chunks of the sequence, each holding all the features of a few positions.

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
        q = self.w_q(query).view(batch, self.h, -1, self.d_k)   # the mistake: heads cut along the sequence
        k = self.w_k(key).view(batch, self.h, -1, self.d_k)
        v = self.w_v(value).view(batch, self.h, -1, self.d_k)
        _, weights = scaled_dot_product_attention(q, k, v, mask)
        x = self.dropout(weights) @ v
        x = x.transpose(1, 2).reshape(batch, -1, self.h * self.d_k)
        return self.w_o(x), weights
