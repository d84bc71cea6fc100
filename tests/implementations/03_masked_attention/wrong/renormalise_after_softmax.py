"""Softmax over all keys, then zeroes the masked weights and renormalises. Equal in exact arithmetic, but a
padded key with a huge score takes all the weight before it is removed, and the real keys are left with
0 / 0 (clamped here to 0). Fully masked rows come out 0, except in float16, where the clamp 1e-30 is 0 and they
are 0 / 0 = NaN.

expect-fail: ch03_masked_keys_get_zero_weight, ch03_fully_masked_rows_are_zero
"""
# cell: ch03_scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    weights = torch.softmax(attention_scores(q, k), dim=-1)
    if mask is not None:
        weights = weights * mask
        weights = weights / weights.sum(dim=-1, keepdim=True).clamp_min(1e-30)
    return weights @ v, weights
