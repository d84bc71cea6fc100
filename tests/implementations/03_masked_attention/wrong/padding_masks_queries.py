"""Padding mask shaped (batch, 1, max_len, 1): it hides the padded *queries* instead of the padded keys.

expect-fail: ch03_padding_from_lengths, ch03_masks_combine_and_broadcast
"""
# cell: ch03_padding_mask
def padding_mask(lengths, max_len):
    real = torch.arange(max_len, device=lengths.device)[None, :] < lengths[:, None]
    return real[:, None, :, None]
