"""evaluate takes len(data) // block_size windows: when the length is a multiple of block_size, the last window
needs a target after the end of the text.

expect-fail: ch12_evaluate_value
"""
# cell: ch12_evaluate_function
def evaluate(model, data, block_size, batch_size=64, device="cpu"):
    was_training = model.training
    model.eval()
    windows = len(data) // block_size
    total, count = 0.0, 0
    with torch.no_grad():
        for first in range(0, windows, batch_size):
            index = torch.arange(first, min(first + batch_size, windows))[:, None] * block_size + torch.arange(block_size)
            logits = model(data[index].long().to(device))
            targets = data[index + 1].long().to(device)
            total += F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum").item()
            count += targets.numel()
    model.train(was_training)
    return total / count
