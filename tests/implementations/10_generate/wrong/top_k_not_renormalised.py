"""Top-k zeroes the other probabilities but does not renormalise, then samples by inverse CDF: the missing mass
lands on the last token of the vocabulary.

expect-fail: ch10_sampling
"""
# cell: ch10_sample_next_function
def sample_next(logits, temperature=1.0, top_k=None, generator=None):
    probs = torch.softmax(logits / temperature, dim=-1)
    if top_k is not None and top_k < probs.shape[-1]:
        kth = probs.topk(top_k, dim=-1).values[:, -1:]
        probs = probs * (probs >= kth)
    u = torch.rand(probs.shape[0], 1, generator=generator, device=probs.device, dtype=probs.dtype)
    below = (probs.cumsum(dim=-1) < u).sum(dim=-1)
    return below.clamp(max=probs.shape[-1] - 1)
