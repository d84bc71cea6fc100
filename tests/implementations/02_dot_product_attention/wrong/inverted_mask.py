"""Inverted mask: treats True as "blocked" (the convention of nn.MultiheadAttention's key_padding_mask).

expect-fail: sdpa_mask
"""
# cell: scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = softmax(scores, dim=-1)
    return weights @ v, weights
