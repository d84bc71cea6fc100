"""Treats a fully masked row as "a sequence of length 0": only a sequence whose mask allows no key at
all gets the safe treatment. A padded query of a sequence that is not empty (a (batch, 1, L, 1) &
(batch, 1, 1, L) mask), or one query row of a 2-D mask, still gets softmax of a row of -inf: NaN.

expect-fail: ch03_fully_masked_rows_are_zero
"""
# cell: ch03_scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    scores = attention_scores(q, k)
    if mask is None:
        weights = torch.softmax(scores, dim=-1)
        return weights @ v, weights
    rows = mask if mask.dim() >= 2 else mask[None]
    empty = ~rows.any(dim=-1, keepdim=True).any(dim=-2, keepdim=True)   # (..., 1, 1): nothing allowed anywhere
    scores = scores.masked_fill(~mask, float("-inf")).masked_fill(empty, 0.0)
    weights = torch.softmax(scores, dim=-1).masked_fill(empty, 0.0)
    return weights @ v, weights
