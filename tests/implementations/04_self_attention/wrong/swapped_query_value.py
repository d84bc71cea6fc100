"""Cross-attention with the query and the value swapped, as in a widely copied from-scratch notebook:
queries from the context, values from x. Self-attention is unaffected (x is the context); with a context
of another length the shapes do not fit, with one of the same length it silently computes the wrong thing.

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
        if context is None:
            context = x
        q = self.w_q(context)
        k = self.w_k(context)
        v = self.w_v(x)
        return scaled_dot_product_attention(q, k, v, mask)
