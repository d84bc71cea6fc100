"""Projects the keys with w_q (a copy-paste slip): w_k is never used and gets no gradient.

expect-fail: ch04_self_attention_values, ch04_cross_attention, ch04_masks, ch04_gradients
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
        q = self.w_q(x)
        k = self.w_q(context)
        v = self.w_v(context)
        return scaled_dot_product_attention(q, k, v, mask)
