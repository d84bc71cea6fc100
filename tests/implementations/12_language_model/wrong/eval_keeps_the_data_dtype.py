"""evaluate feeds the windows in the dtype of data: a text stored as torch.int16 or torch.uint8 (as section 5
stores the play) reaches nn.Embedding and F.cross_entropy, which want torch.long ids, and fails.

expect-fail: ch12_evaluate_value
"""
# cell: ch12_evaluate_function
def evaluate(model, data, block_size, batch_size=64, device="cpu"):
    was_training = model.training
    model.eval()
    windows = (len(data) - 1) // block_size
    total, count = 0.0, 0
    with torch.no_grad():
        for first in range(0, windows, batch_size):
            index = torch.arange(first, min(first + batch_size, windows))[:, None] * block_size + torch.arange(block_size)
            logits = model(data[index].to(device))
            targets = data[index + 1].to(device)
            total += F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum").item()
            count += targets.numel()
    model.train(was_training)
    return total / count
