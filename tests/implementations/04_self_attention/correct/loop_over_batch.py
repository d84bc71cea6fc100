"""One sequence at a time, with 2-D matrices: the mask is broadcast to (batch, L_q, L_k) first."""
# cell: ch04_self_attention_module
class SelfAttention(nn.Module):
    def __init__(self, d_model, d_k, d_v=None):
        super().__init__()
        self.w_q = nn.Linear(d_model, d_k, bias=False)
        self.w_k = nn.Linear(d_model, d_k, bias=False)
        self.w_v = nn.Linear(d_model, d_v or d_k, bias=False)

    def forward(self, x, context=None, mask=None):
        context = x if context is None else context
        batch, l_q, l_k = x.size(0), x.size(1), context.size(1)
        if mask is not None:
            mask = mask.expand(batch, l_q, l_k)
        outputs, all_weights = [], []
        for b in range(batch):
            q = x[b] @ self.w_q.weight.T          # (L_q, d_k)
            k = context[b] @ self.w_k.weight.T    # (L_k, d_k)
            v = context[b] @ self.w_v.weight.T    # (L_k, d_v)
            out, w = scaled_dot_product_attention(q, k, v, None if mask is None else mask[b])
            outputs.append(out)
            all_weights.append(w)
        return torch.stack(outputs), torch.stack(all_weights)
