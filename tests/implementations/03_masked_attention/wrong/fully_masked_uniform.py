"""Masks with -1e9 instead of -inf and no rule for fully masked rows: no NaN, but such a row is uniform,
averaging the padding, instead of zero.

expect-fail: ch03_fully_masked_rows_are_zero
"""
# cell: ch03_scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    scores = attention_scores(q, k)
    if mask is not None:
        scores = scores.masked_fill(~mask, -1e9)
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
