"""Divides by the sum over the whole tensor instead of along `dim`: right only for 1-D input
(and for a single query).

expect-fail: softmax_values, softmax_dim, softmax_stable, sdpa_worked_examples, sdpa_matches_reference, sdpa_mask, sdpa_gradients_and_stability, sdpa_batch_dims
"""
# cell: softmax
def softmax(x, dim=-1):
    exps = torch.exp(x - x.max(dim=dim, keepdim=True).values)
    return exps / exps.sum()
