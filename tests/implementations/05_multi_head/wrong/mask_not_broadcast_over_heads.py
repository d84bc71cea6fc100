"""Folds the heads into the batch, (batch * heads, L, d_k) with index b * heads + h, as torch does
inside, but repeats the mask with `repeat` (index h * batch + b) instead of `repeat_interleave`:
every head gets the mask of another sequence. A causal mask, the same for every sequence, hides it;
a padding mask with different lengths shows it.

expect-fail: ch05_masks, ch05_gradients
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

    def fold(self, x):  # (batch, L, d_model) -> (batch * heads, L, d_k)
        batch, length, _ = x.shape
        return x.view(batch, length, self.h, self.d_k).transpose(1, 2).reshape(batch * self.h, length, self.d_k)

    def forward(self, query, key, value, mask=None):
        batch, l_q, l_k = query.size(0), query.size(1), key.size(1)
        q, k, v = self.fold(self.w_q(query)), self.fold(self.w_k(key)), self.fold(self.w_v(value))
        if mask is not None:
            if mask.dim() == 4:
                mask = mask.expand(batch, self.h, l_q, l_k)[:, 0]     # (batch, L_q, L_k)
            else:
                mask = mask.expand(batch, l_q, l_k)
            mask = mask.repeat(self.h, 1, 1)                          # the mistake: should be repeat_interleave
        _, weights = scaled_dot_product_attention(q, k, v, mask)      # (batch * heads, L_q, L_k)
        x = self.dropout(weights) @ v
        x = x.view(batch, self.h, l_q, self.d_k).transpose(1, 2).reshape(batch, l_q, -1)
        return self.w_o(x), weights.view(batch, self.h, l_q, l_k)
