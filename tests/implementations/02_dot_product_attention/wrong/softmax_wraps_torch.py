"""Wraps torch's own softmax instead of writing it with max, exp and sum: right values, but the spec says torch's
softmax is what yours is compared with and earns nothing (the hidden test finds it in the autograd graph).

expect-fail: softmax_values
"""
# cell: softmax
def softmax(x, dim=-1):
    return torch.softmax(x, dim=dim)
