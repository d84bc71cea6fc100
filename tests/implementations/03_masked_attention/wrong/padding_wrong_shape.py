"""Padding mask of shape (batch, max_len) without the head and query axes: against (L, L) or
(batch, heads, L, L) it broadcasts the batch axis onto the queries (or fails).

expect-fail: ch03_padding_from_lengths, ch03_masks_combine_and_broadcast
"""
# cell: ch03_padding_mask
def padding_mask(lengths, max_len):
    return torch.arange(max_len, device=lengths.device)[None, :] < lengths[:, None]
