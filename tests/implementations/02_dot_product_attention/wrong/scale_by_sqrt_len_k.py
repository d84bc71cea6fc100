"""Scales by sqrt of the number of keys (k.size(-2)) instead of the key dimension d_k.
Right by accident whenever L_k == d_k, as in both 2x2 worked examples.

expect-fail: sdpa_worked_examples, sdpa_matches_reference, sdpa_mask, sdpa_gradients_and_stability, sdpa_batch_dims
"""
# cell: scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(k.size(-2))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = softmax(scores, dim=-1)
    return weights @ v, weights
