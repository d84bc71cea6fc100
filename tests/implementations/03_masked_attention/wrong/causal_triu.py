"""Causal mask with `triu` instead of `tril`: every position attends to the future and not to the past.

expect-fail: ch03_causal_lower_triangle, ch03_masks_combine_and_broadcast
"""
# cell: ch03_causal_mask
def causal_mask(size):
    return torch.triu(torch.ones(size, size, dtype=torch.bool))
