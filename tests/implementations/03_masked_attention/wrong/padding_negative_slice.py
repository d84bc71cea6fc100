"""Starts from a row of True and clears the padding by slicing from the end, mask[b, -(max_len - n):]:
for a sequence that fills max_len the slice is [-0:], the whole row, so a full-length sequence gets
a row of False.

expect-fail: ch03_padding_from_lengths, ch03_masks_combine_and_broadcast
"""
# cell: ch03_padding_mask
def padding_mask(lengths, max_len):
    mask = torch.ones(len(lengths), max_len, dtype=torch.bool, device=lengths.device)
    for b, n in enumerate(lengths.tolist()):
        mask[b, -(max_len - n):] = False
    return mask[:, None, None, :]
