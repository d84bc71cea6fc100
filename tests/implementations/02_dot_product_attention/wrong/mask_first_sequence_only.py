"""Drops the mask's batch dimension with mask[0] to make shapes fit: every sequence gets the
first sequence's mask. Invisible with a batch of one.

expect-fail: sdpa_mask
"""
# cell: scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask[0], float("-inf"))
    weights = softmax(scores, dim=-1)
    return weights @ v, weights
