"""Rotary embeddings GPT-J style (cos and sin tables repeated for each feature of a pair, rotate_every_two), and
grouped-query attention with expand + reshape and F.scaled_dot_product_attention (boolean mask, True = attend).
"""
# cell: ch13_apply_rotary_function
def apply_rotary(x, offset=0, base=10000.0):
    d_head = x.shape[-1]
    positions = torch.arange(x.shape[-2], dtype=x.dtype, device=x.device) + offset
    inv = torch.pow(torch.tensor(base, dtype=x.dtype, device=x.device),
                    -torch.arange(0, d_head, 2, dtype=x.dtype, device=x.device) / d_head)
    angles = (positions[:, None] * inv[None, :]).repeat_interleave(2, dim=-1)   # (L, d_head): theta_0, theta_0, theta_1, ...
    swapped = torch.stack((-x[..., 1::2], x[..., 0::2]), dim=-1).flatten(-2)    # (-x1, x0, -x3, x2, ...)
    return x * angles.cos() + swapped * angles.sin()

# cell: ch13_gqa_class
class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, rotary=False):
        super().__init__()
        if d_model % num_heads:
            raise ValueError("num_heads must divide d_model")
        if num_heads % num_kv_heads:
            raise ValueError("num_kv_heads must divide num_heads")
        self.h, self.kv, self.dh, self.rotary = num_heads, num_kv_heads, d_model // num_heads, rotary
        self.w_q = nn.Linear(d_model, d_model, bias=False)
        self.w_k = nn.Linear(d_model, num_kv_heads * self.dh, bias=False)
        self.w_v = nn.Linear(d_model, num_kv_heads * self.dh, bias=False)
        self.w_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, mask=None):
        b, n, d = x.shape
        q = self.w_q(x).unflatten(-1, (self.h, self.dh)).transpose(1, 2)
        k = self.w_k(x).unflatten(-1, (self.kv, self.dh)).transpose(1, 2)
        v = self.w_v(x).unflatten(-1, (self.kv, self.dh)).transpose(1, 2)
        if self.rotary:
            q = apply_rotary(q)
            k = apply_rotary(k)
        g = self.h // self.kv
        k = k[:, :, None].expand(b, self.kv, g, n, self.dh).reshape(b, self.h, n, self.dh)
        v = v[:, :, None].expand(b, self.kv, g, n, self.dh).reshape(b, self.h, n, self.dh)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.w_o(out.transpose(1, 2).flatten(2))
