"""Folds the heads into the batch, (batch * heads, L, d_k) with index b * heads + h, uses bmm, and
repeats the mask with repeat_interleave (the mask of sequence b for each of its heads)."""
# cell: ch05_multi_head_attention_module
class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0, bias=True):
        super().__init__()
        if d_model % num_heads:
            raise ValueError(f"{num_heads} heads cannot share d_model={d_model} features equally")
        self.h, self.d_k = num_heads, d_model // num_heads
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def fold(self, x):  # (batch, L, d_model) -> (batch * heads, L, d_k)
        batch, length, _ = x.shape
        return x.view(batch, length, self.h, self.d_k).transpose(1, 2).reshape(batch * self.h, length, self.d_k)

    def forward(self, query, key, value, mask=None):
        batch, l_q, l_k = query.size(0), query.size(1), key.size(1)
        q, k, v = self.fold(self.w_q(query)), self.fold(self.w_k(key)), self.fold(self.w_v(value))
        scores = torch.bmm(q, k.transpose(1, 2)) * self.d_k ** -0.5         # (batch * heads, L_q, L_k)
        if mask is not None:
            mask = mask.expand(batch, self.h, l_q, l_k).reshape(batch * self.h, l_q, l_k)
            scores = scores.masked_fill(~mask, -torch.inf)
        weights = torch.nan_to_num(torch.softmax(scores, dim=-1), nan=0.0)
        x = torch.bmm(self.dropout(weights), v).view(batch, self.h, l_q, self.d_k)
        x = x.transpose(1, 2).reshape(batch, l_q, self.h * self.d_k)
        return self.w_o(x), weights.view(batch, self.h, l_q, l_k)
