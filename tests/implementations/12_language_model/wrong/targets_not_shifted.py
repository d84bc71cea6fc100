"""get_batch returns the window itself as its targets (y = x): the model learns to copy its input, and its
training loss falls towards 0 while it learns nothing about what comes next.

expect-fail: ch12_get_batch_windows
"""
# cell: ch12_get_batch_function
def get_batch(data, block_size, batch_size, generator, device="cpu"):
    starts = torch.randint(len(data) - block_size, (batch_size,), generator=generator)
    x = torch.stack([data[s:s + block_size] for s in starts.tolist()]).long()
    y = x.clone()
    return x.to(device), y.to(device)
