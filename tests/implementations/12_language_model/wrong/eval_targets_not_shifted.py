"""evaluate scores each window against itself (targets = inputs), not against the next tokens.

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
            inputs = data[index].long().to(device)
            total += F.cross_entropy(model(inputs).flatten(0, 1), inputs.flatten(), reduction="sum").item()
            count += inputs.numel()
    model.train(was_training)
    return total / count
