"""Missing 1/sqrt(d_k): the unscaled formula the widely copied class notes compute.

expect-fail: sdpa_worked_examples, sdpa_matches_reference, sdpa_mask, sdpa_gradients_and_stability, sdpa_batch_dims
"""
# cell: scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = softmax(scores, dim=-1)
    return weights @ v, weights
