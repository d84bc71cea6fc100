"""topk with largest=False: keeps the k least likely tokens.

expect-fail: ch10_sampling
"""
# cell: ch10_sample_next_function
def sample_next(logits, temperature=1.0, top_k=None, generator=None):
    z = logits / temperature
    if top_k is not None and top_k < z.shape[-1]:
        idx = z.topk(top_k, dim=-1, largest=False).indices
        keep = torch.full_like(z, float("-inf")).scatter(-1, idx, 0.0)
        z = z + keep
    return torch.multinomial(torch.softmax(z, dim=-1), 1, generator=generator)[:, 0]
