"""Computes softmax in float32 whatever the input dtype ("for safety"): float64 inputs come back float32.

expect-fail: softmax_dim, sdpa_matches_reference, sdpa_gradients_and_stability
"""
# cell: softmax
def softmax(x, dim=-1):
    x = x.float()
    exps = torch.exp(x - x.max(dim=dim, keepdim=True).values)
    return exps / exps.sum(dim=dim, keepdim=True)
