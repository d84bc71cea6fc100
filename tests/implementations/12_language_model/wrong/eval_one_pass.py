"""evaluate ignores batch_size and feeds every window in one forward pass: right on a short text, out of memory
on a long one.

expect-fail: ch12_evaluate_value
"""
# cell: ch12_evaluate_function
def evaluate(model, data, block_size, batch_size=64, device="cpu"):
    was_training = model.training
    model.eval()
    windows = (len(data) - 1) // block_size
    index = torch.arange(windows)[:, None] * block_size + torch.arange(block_size)
    with torch.no_grad():
        logits = model(data[index].long().to(device))
        loss = F.cross_entropy(logits.flatten(0, 1), data[index + 1].long().to(device).flatten())
    model.train(was_training)
    return loss.item()
