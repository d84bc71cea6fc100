"""Causal mask that excludes the diagonal (`tril(diagonal=-1)`): a position may not attend to itself,
and the first position may attend to nothing at all.

expect-fail: ch03_causal_lower_triangle, ch03_masks_combine_and_broadcast
"""
# cell: ch03_causal_mask
def causal_mask(size):
    return torch.tril(torch.ones(size, size, dtype=torch.bool), diagonal=-1)
