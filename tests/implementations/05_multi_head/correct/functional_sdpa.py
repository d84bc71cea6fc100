"""torch.nn.functional.scaled_dot_product_attention computes the heads' outputs (with its own
dropout_p in training mode); the weights it does not return are computed separately. Fully masked
rows are handled by hand, since F.scaled_dot_product_attention gives NaN there on some versions
and devices."""
# cell: ch05_multi_head_attention_module
class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.0, bias=True):
        super().__init__()
        if d_model % num_heads != 0:
            raise ValueError(f"d_model ({d_model}) is not a multiple of num_heads ({num_heads})")
        self.num_heads, self.p = num_heads, dropout
        self.w_q = nn.Linear(d_model, d_model, bias=bias)
        self.w_k = nn.Linear(d_model, d_model, bias=bias)
        self.w_v = nn.Linear(d_model, d_model, bias=bias)
        self.w_o = nn.Linear(d_model, d_model, bias=bias)

    def _split(self, x):
        b, n, d = x.shape
        return x.view(b, n, self.num_heads, d // self.num_heads).transpose(1, 2)

    def forward(self, query, key, value, mask=None):
        q, k, v = self._split(self.w_q(query)), self._split(self.w_k(key)), self._split(self.w_v(value))
        scores = q @ k.transpose(-1, -2) / math.sqrt(q.size(-1))
        if mask is None:
            weights = scores.softmax(-1)
            heads = F.scaled_dot_product_attention(q, k, v, dropout_p=self.p if self.training else 0.0)
        else:
            alive = mask.any(dim=-1, keepdim=True)                  # queries with at least one key
            safe = mask | ~alive                                    # fully masked rows: attend anywhere ...
            weights = scores.masked_fill(~safe, float("-inf")).softmax(-1) * alive
            heads = F.scaled_dot_product_attention(q, k, v, attn_mask=safe,
                                                   dropout_p=self.p if self.training else 0.0) * alive  # ... then zero them
        b, _, l_q, _ = heads.shape
        return self.w_o(heads.transpose(1, 2).reshape(b, l_q, -1)), weights
