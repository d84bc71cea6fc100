"""`self.w_k = self.w_q`: one layer under two names (a copy-paste slip), so queries and keys share their weights.
The attributes exist, with the right types and sizes, so the visible check of the projections passes; copying two
different weights into them leaves only the second (the visible checks of the values catch that), and the hidden
test of the projections sees one layer where there should be two.

expect-fail: ch04_projections, ch04_self_attention_values, ch04_cross_attention, ch04_masks, ch04_gradients
"""
# cell: ch04_self_attention_module
class SelfAttention(nn.Module):
    def __init__(self, d_model, d_k, d_v=None):
        super().__init__()
        self.w_q = nn.Linear(d_model, d_k, bias=False)
        self.w_k = self.w_q                                  # the mistake: the same layer
        self.w_v = nn.Linear(d_model, d_k if d_v is None else d_v, bias=False)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        return scaled_dot_product_attention(self.w_q(x), self.w_k(context), self.w_v(context), mask)
