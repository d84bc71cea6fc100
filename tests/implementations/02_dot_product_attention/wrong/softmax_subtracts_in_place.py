"""Subtracts the max in place, `x -= x.max(...)`: the result is right, but the caller's tensor is changed (the
spec says softmax must not modify its input; the visible check tries it).

expect-fail: softmax_values
"""
# cell: softmax
def softmax(x, dim=-1):
    x -= x.max(dim=dim, keepdim=True).values
    exps = torch.exp(x)
    return exps / exps.sum(dim=dim, keepdim=True)
