"""Ignores the `dim` argument and always normalises the last dimension.

expect-fail: softmax_dim
"""
# cell: softmax
def softmax(x, dim=-1):
    x_max = x.max(dim=-1, keepdim=True).values
    exps = torch.exp(x - x_max)
    return exps / exps.sum(dim=-1, keepdim=True)
