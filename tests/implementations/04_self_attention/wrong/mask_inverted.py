"""Inverts the mask, as torch.nn.MultiheadAttention's boolean masks want (True = blocked there),
mixing that convention with the course's (True = may attend).

expect-fail: ch04_masks
"""
# cell: ch04_self_attention_module
class SelfAttention(nn.Module):
    def __init__(self, d_model, d_k, d_v=None):
        super().__init__()
        self.w_q = nn.Linear(d_model, d_k, bias=False)
        self.w_k = nn.Linear(d_model, d_k, bias=False)
        self.w_v = nn.Linear(d_model, d_v or d_k, bias=False)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        if mask is not None:
            mask = ~mask
        return scaled_dot_product_attention(self.w_q(x), self.w_k(context), self.w_v(context), mask)
