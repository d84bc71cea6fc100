"""Masks with -inf and stops there (chapter 02's function): right on every row that may attend to
something, NaN on a fully masked row (softmax of a row of -inf is 0/0).

expect-fail: ch03_fully_masked_rows_are_zero
"""
# cell: ch03_scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    scores = attention_scores(q, k)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
