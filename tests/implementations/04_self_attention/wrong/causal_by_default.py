"""Applies a causal mask whenever no mask is given in self-attention (a decoder habit): mask=None must mean
no mask, and attention without positions must not depend on order.

expect-fail: ch04_self_attention_values, ch04_masks, ch04_permutation_equivariance
"""
# cell: ch04_self_attention_module
class SelfAttention(nn.Module):
    def __init__(self, d_model, d_k, d_v=None):
        super().__init__()
        self.w_q = nn.Linear(d_model, d_k, bias=False)
        self.w_k = nn.Linear(d_model, d_k, bias=False)
        self.w_v = nn.Linear(d_model, d_v or d_k, bias=False)

    def forward(self, x, context=None, mask=None):
        if context is None:
            context = x
            if mask is None:
                mask = causal_mask(x.size(1), device=x.device)
        return scaled_dot_product_attention(self.w_q(x), self.w_k(context), self.w_v(context), mask)
