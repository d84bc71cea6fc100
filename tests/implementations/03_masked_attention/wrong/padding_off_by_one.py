"""Padding mask off by one (`<=`): position `length` is treated as a real token.

expect-fail: ch03_padding_from_lengths, ch03_masks_combine_and_broadcast
"""
# cell: ch03_padding_mask
def padding_mask(lengths, max_len):
    positions = torch.arange(max_len, device=lengths.device)
    return (positions[None, :] <= lengths[:, None])[:, None, None, :]
