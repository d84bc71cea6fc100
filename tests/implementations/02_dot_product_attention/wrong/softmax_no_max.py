"""Softmax without subtracting the max: exp() overflows for large logits.

expect-fail: softmax_stable, sdpa_gradients_and_stability
"""
# cell: softmax
def softmax(x, dim=-1):
    exps = torch.exp(x)
    return exps / exps.sum(dim=dim, keepdim=True)
