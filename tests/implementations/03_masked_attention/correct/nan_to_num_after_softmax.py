"""Masks with masked_fill(-inf), lets softmax produce NaN on fully masked rows and replaces it with 0.
The backward pass stays finite: masked_fill passes no gradient to the positions it filled."""
# cell: ch03_scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    scores = attention_scores(q, k)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1).nan_to_num(nan=0.0)
    return weights @ v, weights
