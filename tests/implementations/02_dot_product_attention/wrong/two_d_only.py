"""Matrix-only code (torch.mm and .T): right for the 2-D worked examples, fails with batch dims.

expect-fail: sdpa_matches_reference, sdpa_mask, sdpa_gradients_and_stability, sdpa_batch_dims
"""
# cell: scaled_dot_product_attention
def scaled_dot_product_attention(q, k, v, mask=None):
    scores = torch.mm(q, k.T) / math.sqrt(q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = softmax(scores, dim=-1)
    return torch.mm(weights, v), weights
