"""Pads to the longest length in the batch instead of `max_len`: right whenever the longest sequence fills
`max_len` (as in the self-checks), wrong for a batch padded to a fixed size.

expect-fail: ch03_padding_from_lengths, ch03_masks_combine_and_broadcast
"""
# cell: ch03_padding_mask
def padding_mask(lengths, max_len):
    positions = torch.arange(int(lengths.max()), device=lengths.device)
    return (positions[None, :] < lengths[:, None])[:, None, None, :]
