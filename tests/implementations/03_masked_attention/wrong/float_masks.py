"""Both masks as float 0/1 tensors, the style of `masked_fill(mask == 0, -1e9)` tutorials: the patterns are
right, but the masks are not boolean (and `padding & causal` fails on floats).

expect-fail: ch03_padding_from_lengths, ch03_causal_lower_triangle, ch03_masks_combine_and_broadcast
"""
# cell: ch03_padding_mask
def padding_mask(lengths, max_len):
    positions = torch.arange(max_len, device=lengths.device)
    return (positions[None, :] < lengths[:, None]).float()[:, None, None, :]


# cell: ch03_causal_mask
def causal_mask(size):
    return torch.tril(torch.ones(size, size))
