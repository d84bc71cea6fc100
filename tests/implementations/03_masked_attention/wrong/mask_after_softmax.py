"""Applies the mask after the softmax: masked weights are 0, and fully masked rows come out 0, but the
other rows no longer sum to 1.

expect-fail: ch03_masked_keys_get_zero_weight, ch03_fully_masked_rows_are_zero
"""
# cell: ch03_scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    weights = torch.softmax(attention_scores(q, k), dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ v, weights
