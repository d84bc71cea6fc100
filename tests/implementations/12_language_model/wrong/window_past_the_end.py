"""get_batch lets a window start at len(data) - block_size, one too far: its last target would be the token after
the end of the text (torch.randint's upper bound taken as included).

expect-fail: ch12_get_batch_windows, ch12_get_batch_generator
"""
# cell: ch12_get_batch_function
def get_batch(data, block_size, batch_size, generator, device="cpu"):
    starts = torch.randint(len(data) - block_size + 1, (batch_size,), generator=generator)
    x = torch.stack([data[s:s + block_size] for s in starts.tolist()]).long()
    y = torch.stack([data[s + 1:s + block_size + 1] for s in starts.tolist()]).long()
    return x.to(device), y.to(device)
