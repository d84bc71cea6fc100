"""einsum throughout, with its own masked softmax that gives zero weights to a fully masked row."""
# cell: ch05_multi_head_attention_module
class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0, bias=True):
        super().__init__()
        if d_model % num_heads:
            raise ValueError("num_heads must divide d_model, got d_model=%d, num_heads=%d" % (d_model, num_heads))
        self.h = num_heads
        self.w_q, self.w_k, self.w_v, self.w_o = (nn.Linear(d_model, d_model, bias=bias) for _ in range(4))
        self.dropout = nn.Dropout(dropout)

    def forward(self, query, key, value, mask=None):
        b, l_q, d = query.shape
        l_k = key.shape[1]
        q = self.w_q(query).reshape(b, l_q, self.h, d // self.h)
        k = self.w_k(key).reshape(b, l_k, self.h, d // self.h)
        v = self.w_v(value).reshape(b, l_k, self.h, d // self.h)
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(d // self.h)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        top = scores.amax(dim=-1, keepdim=True)
        exps = torch.exp(scores - torch.where(torch.isfinite(top), top, torch.zeros_like(top)))
        total = exps.sum(dim=-1, keepdim=True)
        weights = exps / torch.where(total > 0, total, torch.ones_like(total))
        heads = torch.einsum("bhqk,bkhd->bqhd", self.dropout(weights), v)
        return self.w_o(heads.reshape(b, l_q, d)), weights
