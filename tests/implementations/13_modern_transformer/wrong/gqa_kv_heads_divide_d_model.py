"""The constructor checks that num_kv_heads divides d_model instead of num_heads (which must be split into equal
groups): GroupedQueryAttention(12, 4, 3) is built, 12 features splitting into 3, with groups of 4 // 3 = 1 head.

expect-fail: ch13_gqa_structure
"""
# cell: ch13_gqa_class
class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, rotary=False):
        super().__init__()
        if d_model % num_heads != 0 or d_model % num_kv_heads != 0:
            raise ValueError(f"d_model={d_model}, num_heads={num_heads}, num_kv_heads={num_kv_heads}: each must divide the one before")
        self.num_heads, self.num_kv_heads, self.rotary = num_heads, num_kv_heads, rotary
        self.d_head = d_model // num_heads
        self.w_q = nn.Linear(d_model, d_model, bias=False)
        self.w_k = nn.Linear(d_model, num_kv_heads * self.d_head, bias=False)
        self.w_v = nn.Linear(d_model, num_kv_heads * self.d_head, bias=False)
        self.w_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, mask=None):
        batch, length, d_model = x.shape
        q = self.w_q(x).view(batch, length, self.num_heads, self.d_head).transpose(1, 2)
        k = self.w_k(x).view(batch, length, self.num_kv_heads, self.d_head).transpose(1, 2)
        v = self.w_v(x).view(batch, length, self.num_kv_heads, self.d_head).transpose(1, 2)
        if self.rotary:
            q, k = apply_rotary(q), apply_rotary(k)
        group = self.num_heads // self.num_kv_heads
        k = k.repeat_interleave(group, dim=1)
        v = v.repeat_interleave(group, dim=1)
        out, _ = scaled_dot_product_attention(q, k, v, mask)
        return self.w_o(out.transpose(1, 2).reshape(batch, length, d_model))
