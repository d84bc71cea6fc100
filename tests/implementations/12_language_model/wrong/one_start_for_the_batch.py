"""get_batch draws one start and gives it to every row: the batch is batch_size copies of one window.

expect-fail: ch12_get_batch_windows, ch12_get_batch_generator
"""
# cell: ch12_get_batch_function
def get_batch(data, block_size, batch_size, generator, device="cpu"):
    start = torch.randint(len(data) - block_size, (1,), generator=generator)
    positions = start + torch.arange(block_size).repeat(batch_size, 1)
    return data[positions].long().to(device), data[positions + 1].long().to(device)
