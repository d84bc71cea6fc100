"""Always self-attention: the context argument is accepted and ignored.

expect-fail: ch04_cross_attention, ch04_masks, ch04_permutation_equivariance, ch04_gradients
"""
# cell: ch04_self_attention_module
class SelfAttention(nn.Module):
    def __init__(self, d_model, d_k, d_v=None):
        super().__init__()
        self.w_q = nn.Linear(d_model, d_k, bias=False)
        self.w_k = nn.Linear(d_model, d_k, bias=False)
        self.w_v = nn.Linear(d_model, d_v or d_k, bias=False)

    def forward(self, x, context=None, mask=None):
        return scaled_dot_product_attention(self.w_q(x), self.w_k(x), self.w_v(x), mask)
