"""Uses the layers' weights through F.linear, and the provided attention."""
# cell: ch04_self_attention_module
class SelfAttention(nn.Module):
    def __init__(self, d_model, d_k, d_v=None):
        super().__init__()
        if d_v is None:
            d_v = d_k
        self.w_q, self.w_k = (nn.Linear(d_model, d_k, bias=False) for _ in range(2))
        self.w_v = nn.Linear(d_model, d_v, bias=False)

    def forward(self, x, context=None, mask=None):
        kv_source = context if context is not None else x
        q = F.linear(x, self.w_q.weight)
        k = F.linear(kv_source, self.w_k.weight)
        v = F.linear(kv_source, self.w_v.weight)
        output, weights = scaled_dot_product_attention(q, k, v, mask=mask)
        return output, weights
