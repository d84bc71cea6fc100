"""Python loops: starts drawn by torch.multinomial over equal weights and windows sliced one by one; evaluate
window by window, accumulating summed losses, under @torch.no_grad() with the mode saved and put back; bits as a
product with 1 / ln 2; top-p by sorting, keeping the sorted prefix, widening it to the ties of its last token,
and Gumbel-max sampling (argmax of the logits plus Gumbel noise drawn from the generator), the -inf logits outside
the nucleus never chosen."""
# cell: ch12_get_batch_function
def get_batch(data, block_size, batch_size, generator, device="cpu"):
    possible = len(data) - block_size
    starts = torch.multinomial(torch.ones(possible), batch_size, replacement=True, generator=generator)
    xs, ys = [], []
    for s in starts.tolist():
        xs.append(data[s:s + block_size].to(torch.long))
        ys.append(data[s + 1:s + block_size + 1].to(torch.long))
    return torch.stack(xs).to(device), torch.stack(ys).to(device)

# cell: ch12_evaluate_function
@torch.no_grad()
def evaluate(model, data, block_size, batch_size=64, device="cpu"):
    was_training = model.training
    model.eval()
    starts = list(range(0, len(data) - block_size, block_size))
    total = torch.zeros((), dtype=torch.float64)
    n = 0
    for i in range(0, len(starts), batch_size):
        x = torch.stack([data[s:s + block_size] for s in starts[i:i + batch_size]]).long().to(device)
        y = torch.stack([data[s + 1:s + block_size + 1] for s in starts[i:i + batch_size]]).long().to(device)
        out = model(x)
        total += F.cross_entropy(out.reshape(-1, out.size(-1)), y.reshape(-1), reduction="sum").double().cpu()
        n += y.numel()
    if was_training:
        model.train()
    return float(total / n)

# cell: ch12_bits_per_character_function
def bits_per_character(loss_nats, chars_per_token=1.0):
    nats_per_char = loss_nats / chars_per_token
    return nats_per_char * (1.0 / math.log(2.0))

# cell: ch12_sample_top_p_function
def sample_top_p(logits, p, generator):
    probs = torch.softmax(logits.float(), dim=-1)
    sorted_probs, sorted_ids = torch.sort(probs, dim=-1, descending=True)
    reached = torch.cumsum(sorted_probs, dim=-1) - sorted_probs < p                  # the sorted prefix
    last = sorted_probs.masked_fill(~reached, float("inf")).min(dim=-1, keepdim=True).values
    keep = probs >= last                                                              # by id, ties included
    noisy = torch.log(probs).masked_fill(~keep, -math.inf)
    u = torch.rand(probs.shape, generator=generator, device=probs.device).clamp_min(1e-12)
    return (noisy - torch.log(-torch.log(u))).argmax(dim=-1)
