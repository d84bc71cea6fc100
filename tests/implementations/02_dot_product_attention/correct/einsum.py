"""einsum with named axes instead of matmul and transpose."""
# cell: scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    scores = torch.einsum("...qd,...kd->...qk", q, k) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = softmax(scores, dim=-1)
    output = torch.einsum("...qk,...kv->...qv", weights, v)
    return output, weights
