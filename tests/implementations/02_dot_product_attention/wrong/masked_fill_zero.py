"""Masks scores with 0 instead of -inf: exp(0) = 1, so masked keys still get weight.

expect-fail: sdpa_mask
"""
# cell: scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, 0.0)
    weights = softmax(scores, dim=-1)
    return weights @ v, weights
