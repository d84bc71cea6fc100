"""Builds the positions with `torch.arange(max_len)`, on the CPU whatever the device of `lengths`: right on a CPU,
an error as soon as the lengths live on a GPU. The hidden tests show it on any machine with lengths on PyTorch's
`meta` device.

expect-fail: ch03_padding_from_lengths, ch03_masks_combine_and_broadcast
"""
# cell: ch03_padding_mask
def padding_mask(lengths, max_len):
    lengths = torch.as_tensor(lengths)
    positions = torch.arange(max_len)                       # the mistake: no device=lengths.device
    return (positions[None, :] < lengths[:, None])[:, None, None, :]
