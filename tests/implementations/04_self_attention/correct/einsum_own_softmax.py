"""Everything by hand with einsum: its own masked softmax that zeroes fully masked rows."""
# cell: ch04_self_attention_module
class SelfAttention(nn.Module):
    def __init__(self, d_model, d_k, d_v=None):
        super().__init__()
        self.d_k = d_k
        self.w_q = nn.Linear(d_model, d_k, bias=False)
        self.w_k = nn.Linear(d_model, d_k, bias=False)
        self.w_v = nn.Linear(d_model, d_v if d_v is not None else d_k, bias=False)

    def forward(self, x, context=None, mask=None):
        if context is None:
            context = x
        q, k, v = self.w_q(x), self.w_k(context), self.w_v(context)
        scores = torch.einsum("bqd,bkd->bqk", q, k) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        scores = scores - scores.amax(dim=-1, keepdim=True)
        exps = scores.exp()
        if mask is not None:
            exps = exps * mask
        total = exps.sum(dim=-1, keepdim=True)
        weights = exps / torch.where(total > 0, total, torch.ones_like(total))
        return torch.einsum("bqk,bkv->bqv", weights, v), weights
