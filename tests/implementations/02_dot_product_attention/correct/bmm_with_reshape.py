"""Flattens all batch dims into one and uses torch.bmm, then restores the shape."""
# cell: scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    *batch, L_q, d_k = q.shape
    L_k, d_v = k.shape[-2], v.shape[-1]
    q3 = q.reshape(-1, L_q, d_k)                     # (B, L_q, d_k)
    k3 = k.reshape(-1, L_k, d_k)                     # (B, L_k, d_k)
    v3 = v.reshape(-1, L_k, d_v)                     # (B, L_k, d_v)
    scores = torch.bmm(q3, k3.transpose(1, 2)) / math.sqrt(d_k)   # (B, L_q, L_k)
    scores = scores.reshape(*batch, L_q, L_k)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = softmax(scores, dim=-1)
    output = torch.bmm(weights.reshape(-1, L_q, L_k), v3).reshape(*batch, L_q, d_v)
    return output, weights
