"""get_batch copies the generator (a new one seeded with its initial seed) to leave it untouched: every call
with the same generator gives the same batch, so training sees one batch over and over.

expect-fail: ch12_get_batch_generator
"""
# cell: ch12_get_batch_function
def get_batch(data, block_size, batch_size, generator, device="cpu"):
    mine = torch.Generator().manual_seed(generator.initial_seed())
    starts = torch.randint(len(data) - block_size, (batch_size,), generator=mine)
    positions = starts[:, None] + torch.arange(block_size)
    return data[positions].long().to(device), data[positions + 1].long().to(device)
