"""Grouped-query attention without copying the keys: the queries reshaped into (batch, kv_heads, group, L, d_head)
and multiplied with the keys (batch, kv_heads, 1, L, d_head) by broadcasting; the mask expanded and grouped alike.
"""
# cell: ch13_gqa_class
class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model, num_heads, num_kv_heads, rotary=False):
        super().__init__()
        if d_model % num_heads or num_heads % num_kv_heads:
            raise ValueError(f"cannot split d_model={d_model} into {num_heads} heads in {num_kv_heads} groups")
        self.num_heads, self.num_kv_heads, self.rotary = num_heads, num_kv_heads, rotary
        self.d_head = d_model // num_heads
        self.w_q = nn.Linear(d_model, d_model, bias=False)
        self.w_k = nn.Linear(d_model, num_kv_heads * self.d_head, bias=False)
        self.w_v = nn.Linear(d_model, num_kv_heads * self.d_head, bias=False)
        self.w_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, mask=None):
        batch, length, d_model = x.shape
        kv, group, dh = self.num_kv_heads, self.num_heads // self.num_kv_heads, self.d_head
        q = self.w_q(x).reshape(batch, length, self.num_heads, dh).permute(0, 2, 1, 3)
        k = self.w_k(x).reshape(batch, length, kv, dh).permute(0, 2, 1, 3)
        v = self.w_v(x).reshape(batch, length, kv, dh).permute(0, 2, 1, 3)
        if self.rotary:
            q, k = apply_rotary(q), apply_rotary(k)
        q = q.reshape(batch, kv, group, length, dh)                     # heads h = g * group + j
        scores = torch.einsum("bkgqd,bksd->bkgqs", q, k) / math.sqrt(dh)
        if mask is not None:
            grouped = mask.expand(batch, self.num_heads, length, length).reshape(batch, kv, group, length, length)
            scores = scores.masked_fill(~grouped, -math.inf)
        heads = torch.einsum("bkgqs,bksd->bkgqd", scores.softmax(dim=-1), v)
        return self.w_o(heads.reshape(batch, self.num_heads, length, dh).transpose(1, 2).reshape(batch, length, d_model))
