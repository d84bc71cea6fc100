"""With generator=None, draws from a new torch.Generator instead of torch's global generator: every
call starts from the same default seed, so sampling without a generator returns the same tokens every
time, and torch.manual_seed has no effect on it.

expect-fail: ch10_sampling
"""
# cell: ch10_sample_next_function
def sample_next(logits, temperature=1.0, top_k=None, generator=None):
    if generator is None:
        generator = torch.Generator(device=logits.device)               # the mistake: not torch's global one
    scaled = logits / temperature
    if top_k is not None and top_k < scaled.size(-1):
        kth = scaled.topk(top_k, dim=-1).values[:, -1:]
        scaled = scaled.masked_fill(scaled < kth, float("-inf"))
    return torch.multinomial(torch.softmax(scaled, dim=-1), 1, generator=generator).squeeze(-1)
