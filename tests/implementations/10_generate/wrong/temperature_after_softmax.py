"""The temperature divides the probabilities instead of the logits: multinomial renormalises, so the
temperature does nothing.

expect-fail: ch10_sampling
"""
# cell: ch10_sample_next_function
def sample_next(logits, temperature=1.0, top_k=None, generator=None):
    probs = torch.softmax(logits, dim=-1) / temperature
    if top_k is not None and top_k < probs.shape[-1]:
        kth = probs.topk(top_k, dim=-1).values[:, -1:]
        probs = torch.where(probs >= kth, probs, torch.zeros_like(probs))
    return torch.multinomial(probs, 1, generator=generator)[:, 0]
