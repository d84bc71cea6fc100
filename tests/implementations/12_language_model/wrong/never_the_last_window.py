"""get_batch never draws the last possible start, len(data) - block_size - 1 (the upper bound of torch.randint
lowered by one more, as if it were included): the last window of the text is never trained on, and
the other starts come up a little more often than they should.

expect-fail: ch12_get_batch_windows, ch12_get_batch_generator
"""
# cell: ch12_get_batch_function
def get_batch(data, block_size, batch_size, generator, device="cpu"):
    starts = torch.randint(len(data) - block_size - 1, (batch_size,), generator=generator)
    positions = starts[:, None] + torch.arange(block_size)
    return data[positions].long().to(device), data[positions + 1].long().to(device)
