"""Reads the mask with nn.MultiheadAttention's convention (True = blocked): masks the keys it should keep.

expect-fail: ch03_masked_keys_get_zero_weight, ch03_fully_masked_rows_are_zero
"""
# cell: ch03_scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    scores = attention_scores(q, k)
    if mask is None:
        weights = torch.softmax(scores, dim=-1)
    else:
        blocked_row = mask.all(dim=-1, keepdim=True)
        scores = scores.masked_fill(mask, float("-inf")).masked_fill(blocked_row, 0.0)
        weights = torch.softmax(scores, dim=-1).masked_fill(blocked_row, 0.0)
    return weights @ v, weights
