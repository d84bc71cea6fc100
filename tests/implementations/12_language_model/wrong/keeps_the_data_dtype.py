"""get_batch returns the windows in the dtype of data: with a text stored as torch.uint8 or torch.int16 the
targets are not torch.long, which F.cross_entropy refuses.

expect-fail: ch12_get_batch_windows
"""
# cell: ch12_get_batch_function
def get_batch(data, block_size, batch_size, generator, device="cpu"):
    starts = torch.randint(len(data) - block_size, (batch_size,), generator=generator)
    positions = starts[:, None] + torch.arange(block_size)
    return data[positions].to(device), data[positions + 1].to(device)
