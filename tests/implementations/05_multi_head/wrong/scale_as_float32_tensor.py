"""Attention written inline with the scale as a tensor, torch.tensor(d_k).sqrt(): a float32 number whatever the
model's dtype, so sqrt(3) or sqrt(6) is rounded to float32 and a float64 model differs from torch by about 1e-8
of its outputs (right at float32 tolerances, and whenever d_k is a perfect square).

expect-fail: ch05_self_attention, ch05_cross_attention, ch05_gradients
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
        scores = q @ k.transpose(-2, -1) / torch.tensor(self.d_k).sqrt()   # the mistake: a float32 constant
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        weights = scores.softmax(dim=-1)
        if mask is not None:
            weights = weights * mask.any(dim=-1, keepdim=True)          # fully masked rows: zero weights
        x = self.dropout(weights) @ v
        x = x.transpose(1, 2).reshape(batch, -1, self.h * self.d_k)
        return self.w_o(x), weights
