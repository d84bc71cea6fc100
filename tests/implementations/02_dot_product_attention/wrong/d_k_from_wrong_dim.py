"""Takes d_k as k.shape[1]: right for 2-D keys (L_k, d_k), but with a batch dim shape[1] is L_k.

expect-fail: sdpa_matches_reference, sdpa_mask, sdpa_gradients_and_stability, sdpa_batch_dims
"""
# cell: scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    d_k = k.shape[1]
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = softmax(scores, dim=-1)
    return weights @ v, weights
