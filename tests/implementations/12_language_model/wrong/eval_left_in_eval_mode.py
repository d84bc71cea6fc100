"""evaluate calls model.eval() and never restores the mode: training goes on after the first measurement
without its dropout.

expect-fail: ch12_evaluate_modes
"""
# cell: ch12_evaluate_function
def evaluate(model, data, block_size, batch_size=64, device="cpu"):
    model.eval()
    windows = (len(data) - 1) // block_size
    total, count = 0.0, 0
    with torch.no_grad():
        for first in range(0, windows, batch_size):
            index = torch.arange(first, min(first + batch_size, windows))[:, None] * block_size + torch.arange(block_size)
            logits = model(data[index].long().to(device))
            targets = data[index + 1].long().to(device)
            total += F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum").item()
            count += targets.numel()
    return total / count
