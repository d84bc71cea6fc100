"""Subtracts one maximum of the whole tensor (x.max() without dim) instead of each row's own: right for
one row such as [1000, 1001], but a row whose logits lie far below the largest logit of the tensor
underflows to exp(...) = 0 everywhere and gets 0 / 0 = nan.

expect-fail: softmax_stable, sdpa_gradients_and_stability
"""
# cell: softmax
def softmax(x, dim=-1):
    exps = torch.exp(x - x.max())
    return exps / exps.sum(dim=dim, keepdim=True)
