"""Casts the scores to float32: float64 inputs lose precision and the matmul with float64 values fails.

expect-fail: sdpa_matches_reference, sdpa_gradients_and_stability
"""
# cell: scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    scores = (q @ k.transpose(-2, -1)).float() / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = softmax(scores, dim=-1)
    return weights @ v, weights
