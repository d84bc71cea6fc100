"""Raises a ValueError without a message when d_model is not divisible by num_heads: the right error, but it
says nothing about what is wrong.

expect-fail: ch05_projections
"""
# cell: ch05_multi_head_attention_module
class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0, bias=True):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError()                                   # the mistake: no message
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
        x = self.dropout(weights) @ v
        x = x.transpose(1, 2).reshape(batch, -1, self.h * self.d_k)
        return self.w_o(x), weights
