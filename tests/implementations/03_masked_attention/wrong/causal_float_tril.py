"""Causal mask left as float 0/1 (`torch.tril(torch.ones(size, size))`, as many tutorials write it):
the right pattern, but a float mask is not a boolean mask (F.scaled_dot_product_attention adds a float
mask to the scores) and `padding & causal` fails.

expect-fail: ch03_causal_lower_triangle, ch03_masks_combine_and_broadcast
"""
# cell: ch03_causal_mask
def causal_mask(size):
    return torch.tril(torch.ones(size, size))
