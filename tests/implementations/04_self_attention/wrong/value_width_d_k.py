"""Ignores d_v: the values always get width d_k. Right whenever d_v is None; the visible check of the projections
creates a module with d_v = 6.

expect-fail: ch04_projections, ch04_self_attention_values, ch04_cross_attention, ch04_masks, ch04_gradients
"""
# cell: ch04_self_attention_module
class SelfAttention(nn.Module):
    def __init__(self, d_model, d_k, d_v=None):
        super().__init__()
        self.w_q = nn.Linear(d_model, d_k, bias=False)
        self.w_k = nn.Linear(d_model, d_k, bias=False)
        self.w_v = nn.Linear(d_model, d_k, bias=False)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        return scaled_dot_product_attention(self.w_q(x), self.w_k(context), self.w_v(context), mask)
