"""Its own attention with -inf masking, then nan_to_num: fully masked rows come out as zeros, and
masked_fill's backward blocks the gradient through them."""
# cell: ch04_self_attention_module
class SelfAttention(nn.Module):
    def __init__(self, d_model, d_k, d_v=None):
        super().__init__()
        self.w_q = nn.Linear(d_model, d_k, bias=False)
        self.w_k = nn.Linear(d_model, d_k, bias=False)
        self.w_v = nn.Linear(d_model, d_v or d_k, bias=False)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        q, k, v = self.w_q(x), self.w_k(context), self.w_v(context)
        scores = torch.bmm(q, k.transpose(1, 2)) / q.shape[-1] ** 0.5
        if mask is not None:
            scores = scores.masked_fill(torch.logical_not(mask), float("-inf"))
        weights = torch.nan_to_num(torch.softmax(scores, dim=-1), nan=0.0)
        return torch.bmm(weights, v), weights
