"""Windows cut by Tensor.unfold (every window of block_size + 1 tokens, then the rows drawn or the fixed ones
picked), evaluate's windows in one unfold with the model's mode restored in a finally block, bits through
log2(e), and the nucleus from a (vocab, vocab) comparison of every pair of probabilities (the mass strictly above
each token), with no sort at all."""
# cell: ch12_get_batch_function
def get_batch(data, block_size, batch_size, generator, device="cpu"):
    windows = data.long().unfold(0, block_size + 1, 1)          # (len - block_size, block_size + 1)
    rows = torch.randint(windows.shape[0], (batch_size,), generator=generator)
    chosen = windows[rows]
    return chosen[:, :-1].to(device), chosen[:, 1:].to(device)

# cell: ch12_evaluate_function
def evaluate(model, data, block_size, batch_size=64, device="cpu"):
    mode = model.training
    windows = data.long().unfold(0, block_size + 1, block_size)  # (count, block_size + 1), step block_size
    losses = []
    try:
        model.eval()
        with torch.no_grad():
            for chunk in windows.split(batch_size):
                chunk = chunk.to(device)
                logits = model(chunk[:, :-1])
                losses.append(F.cross_entropy(logits.transpose(1, 2), chunk[:, 1:], reduction="none").flatten())
    finally:
        model.train(mode)
    return torch.cat(losses).double().mean().item()

# cell: ch12_bits_per_character_function
def bits_per_character(loss_nats, chars_per_token=1.0):
    return loss_nats * math.log2(math.e) / chars_per_token

# cell: ch12_sample_top_p_function
def sample_top_p(logits, p, generator):
    probs = logits.softmax(dim=-1)                                                       # (batch, vocab)
    above = (probs.unsqueeze(-2) > probs.unsqueeze(-1)) * probs.unsqueeze(-2)            # (batch, vocab, vocab)
    keep = above.sum(dim=-1) < p                                                         # (batch, vocab)
    weights = torch.where(keep, probs, torch.zeros_like(probs))
    return torch.multinomial(weights, 1, generator=generator).view(-1)
