"""Starts as the floor of uniform numbers times the number of windows; evaluate under torch.inference_mode()
with model.train(mode) restoring the mode and the losses kept per window; bits with math.log2 of e computed
inline for tensors too; top-p with the nucleus built in sorted order and mapped back by gather of the inverse
permutation, ties added by a comparison with the crossing probability, and inverse-CDF sampling of the
renormalised nucleus (searchsorted of a uniform number in the cumulative sum)."""
# cell: ch12_get_batch_function
def get_batch(data, block_size, batch_size, generator, device="cpu"):
    count = data.numel() - block_size
    starts = (torch.rand(batch_size, generator=generator, dtype=torch.float64) * count).floor().long()
    offsets = torch.arange(block_size + 1)
    both = data.index_select(0, (starts[:, None] + offsets).flatten()).view(batch_size, block_size + 1).long()
    return both[:, :block_size].to(device), both[:, 1:].to(device)

# cell: ch12_evaluate_function
def evaluate(model, data, block_size, batch_size=64, device="cpu"):
    mode = model.training
    model.eval()
    count = (data.numel() - 1) // block_size
    per_window = []
    with torch.inference_mode():
        for first in range(0, count, batch_size):
            last = min(first + batch_size, count)
            x = torch.stack([data[k * block_size:(k + 1) * block_size] for k in range(first, last)]).long()
            y = torch.stack([data[k * block_size + 1:(k + 1) * block_size + 1] for k in range(first, last)]).long()
            logits = model(x.to(device))
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.to(device).reshape(-1), reduction="none")
            per_window.append(loss.view(last - first, block_size).mean(dim=1))
    model.train(mode)
    return torch.cat(per_window).mean().item()

# cell: ch12_bits_per_character_function
def bits_per_character(loss_nats, chars_per_token=1.0):
    to_bits = 1 / math.log(2)
    return (loss_nats * to_bits) / chars_per_token

# cell: ch12_sample_top_p_function
def sample_top_p(logits, p, generator):
    probs = F.softmax(logits, dim=-1)
    ranked, order = torch.sort(probs, dim=-1, descending=True)
    in_sorted = (torch.cumsum(ranked, dim=-1) - ranked) < p
    crossing = ranked[torch.arange(len(ranked)), in_sorted.sum(dim=-1) - 1].unsqueeze(-1)
    inverse = torch.argsort(order, dim=-1)
    kept_by_id = in_sorted.gather(-1, inverse) | (probs == crossing)
    weights = probs * kept_by_id
    weights = weights / weights.sum(dim=-1, keepdim=True)
    u = torch.rand(len(weights), 1, generator=generator, device=weights.device, dtype=weights.dtype)
    index = torch.searchsorted(weights.cumsum(dim=-1), u * weights.sum(dim=-1, keepdim=True), right=True)
    return index.clamp(max=weights.shape[-1] - 1).squeeze(-1)
