"""Scales q before the product, masks with torch.where and the dtype's most negative finite value
(exp underflows to exactly 0), and writes softmax with amax."""
# cell: softmax
def softmax(x, dim=-1):
    shifted = x - torch.amax(x, dim=dim, keepdim=True)
    e = shifted.exp()
    return e / e.sum(dim, keepdim=True)


# cell: scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    q = q / math.sqrt(q.shape[-1])
    scores = q @ k.mT
    if mask is not None:
        scores = torch.where(mask, scores, torch.finfo(scores.dtype).min)
    weights = softmax(scores)
    return weights @ v, weights
