"""Scales the scores by sqrt(d_model), the width of the tokens, instead of sqrt(d_k), the width of the
queries and keys. Right only when d_k == d_model; the third visible check of the values has d_k = 2, d_model = 6.

expect-fail: ch04_self_attention_values, ch04_cross_attention, ch04_masks, ch04_gradients
"""
# cell: ch04_self_attention_module
class SelfAttention(nn.Module):
    def __init__(self, d_model, d_k, d_v=None):
        super().__init__()
        self.d_model = d_model
        self.w_q = nn.Linear(d_model, d_k, bias=False)
        self.w_k = nn.Linear(d_model, d_k, bias=False)
        self.w_v = nn.Linear(d_model, d_v or d_k, bias=False)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        q, k, v = self.w_q(x), self.w_k(context), self.w_v(context)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_model)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        return weights @ v, weights
