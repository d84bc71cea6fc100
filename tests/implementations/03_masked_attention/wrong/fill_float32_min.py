"""Blocks the scores with float32's most negative number, `torch.finfo(torch.float32).min`, then zeroes the fully
masked rows: right in float32 and float64, but that number does not exist in float16 (which holds at most 65504),
and `masked_fill` refuses it: the lesson's warning about -1e9 in half precision.

expect-fail: ch03_fully_masked_rows_are_zero
"""
# cell: ch03_scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    scores = attention_scores(q, k)
    if mask is None:
        return torch.softmax(scores, dim=-1) @ v, torch.softmax(scores, dim=-1)
    has_key = mask.any(dim=-1, keepdim=True)
    scores = scores.masked_fill(~mask, torch.finfo(torch.float32).min)   # the mistake: float32's, not the scores' dtype
    weights = torch.softmax(scores, dim=-1).masked_fill(~has_key, 0.0)
    return weights @ v, weights
