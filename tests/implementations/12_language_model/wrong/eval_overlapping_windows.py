"""evaluate slides its window one token at a time (every start from 0 to len(data) - block_size - 1): each
position is scored many times, and at a different place in its window each time.

expect-fail: ch12_evaluate_value
"""
# cell: ch12_evaluate_function
def evaluate(model, data, block_size, batch_size=64, device="cpu"):
    was_training = model.training
    model.eval()
    starts = torch.arange(len(data) - block_size)
    total, count = 0.0, 0
    with torch.no_grad():
        for first in range(0, len(starts), batch_size):
            index = starts[first:first + batch_size, None] + torch.arange(block_size)
            logits = model(data[index].long().to(device))
            targets = data[index + 1].long().to(device)
            total += F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum").item()
            count += targets.numel()
    model.train(was_training)
    return total / count
