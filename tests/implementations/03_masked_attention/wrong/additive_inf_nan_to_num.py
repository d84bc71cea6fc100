"""Adds a float mask of 0 / -inf to the scores and cleans the NaN rows with nan_to_num after the softmax:
the forward pass is right, but addition passes the gradient through to the -inf positions and the
softmax backward of a NaN row is NaN, so q and k get NaN gradients.

expect-fail: ch03_fully_masked_rows_are_zero
"""
# cell: ch03_scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    scores = attention_scores(q, k)
    if mask is not None:
        bias = torch.zeros(mask.shape, dtype=scores.dtype, device=scores.device).masked_fill(~mask, float("-inf"))
        scores = scores + bias
    weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)
    return weights @ v, weights
