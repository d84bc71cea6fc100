"""get_batch draws the starts from torch's global generator, not from the one it is given: the batches do not
follow the generator's seed, and the global random state moves.

expect-fail: ch12_get_batch_generator
"""
# cell: ch12_get_batch_function
def get_batch(data, block_size, batch_size, generator, device="cpu"):
    starts = torch.randint(len(data) - block_size, (batch_size,))
    positions = starts[:, None] + torch.arange(block_size)
    return data[positions].long().to(device), data[positions + 1].long().to(device)
