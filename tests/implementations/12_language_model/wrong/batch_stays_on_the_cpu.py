"""get_batch never moves the batch to `device`: on a GPU the model gets CPU tensors and fails, on a CPU nothing
shows.

expect-fail: ch12_get_batch_windows
"""
# cell: ch12_get_batch_function
def get_batch(data, block_size, batch_size, generator, device="cpu"):
    starts = torch.randint(len(data) - block_size, (batch_size,), generator=generator)
    positions = starts[:, None] + torch.arange(block_size)
    return data[positions].long(), data[positions + 1].long()
