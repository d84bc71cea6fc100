"""One head at a time: each head takes its slice of d_k features of the projections, attends with
the provided function, and the heads' outputs are concatenated along the features."""
# cell: ch05_multi_head_attention_module
class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0, bias=True):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(f"cannot split d_model={d_model} into {num_heads} heads of equal width")
        self.num_heads = num_heads
        self.d_k = d_model // num_heads
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)
        self.drop = nn.Dropout(dropout)

    def forward(self, query, key, value, mask=None):
        q, k, v = self.w_q(query), self.w_k(key), self.w_v(value)
        batch, l_q, l_k = q.size(0), q.size(1), k.size(1)
        if mask is not None:
            mask = mask.expand(batch, self.num_heads, l_q, l_k)
        outputs, all_weights = [], []
        for h in range(self.num_heads):
            cols = slice(h * self.d_k, (h + 1) * self.d_k)
            _, w = scaled_dot_product_attention(q[..., cols], k[..., cols], v[..., cols],
                                                None if mask is None else mask[:, h])
            w = self.drop(w)                          # (batch, L_q, L_k)
            outputs.append(w @ v[..., cols])          # (batch, L_q, d_k)
            all_weights.append(w)
        return self.w_o(torch.cat(outputs, dim=-1)), torch.stack(all_weights, dim=1)
