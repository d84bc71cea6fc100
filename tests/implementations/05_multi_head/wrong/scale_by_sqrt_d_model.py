"""Scales the scores by sqrt(d_model) instead of sqrt(d_k) of one head (its own attention inline):
the scores are sqrt(num_heads) times too small.

expect-fail: ch05_self_attention, ch05_cross_attention, ch05_masks, ch05_dropout, ch05_gradients
"""
# cell: ch05_multi_head_attention_module
class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0, bias=True):
        super().__init__()
        if d_model % num_heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by num_heads ({num_heads})")
        self.d_model, self.h, self.d_k = d_model, num_heads, d_model // num_heads
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
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_model)   # the mistake
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        weights = scores.softmax(dim=-1)
        if mask is not None:
            weights = weights * mask
        x = self.dropout(weights) @ v
        x = x.transpose(1, 2).reshape(batch, -1, self.h * self.d_k)
        return self.w_o(x), weights
