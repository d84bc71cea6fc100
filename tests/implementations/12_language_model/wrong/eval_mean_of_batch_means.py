"""evaluate averages the batches' mean losses: when the last batch holds fewer windows, its positions weigh more
than the others'.

expect-fail: ch12_evaluate_value
"""
# cell: ch12_evaluate_function
def evaluate(model, data, block_size, batch_size=64, device="cpu"):
    was_training = model.training
    model.eval()
    windows = (len(data) - 1) // block_size
    means = []
    with torch.no_grad():
        for first in range(0, windows, batch_size):
            index = torch.arange(first, min(first + batch_size, windows))[:, None] * block_size + torch.arange(block_size)
            logits = model(data[index].long().to(device))
            targets = data[index + 1].long().to(device)
            means.append(F.cross_entropy(logits.flatten(0, 1), targets.flatten()).item())
    model.train(was_training)
    return sum(means) / len(means)
