"""Applies the mask after the softmax: masked weights are 0 but rows no longer sum to 1.

expect-fail: sdpa_mask
"""
# cell: scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    weights = softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ v, weights
