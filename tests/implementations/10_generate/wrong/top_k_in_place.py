"""Masks the logits outside the top k in place: the caller's logits are changed (and temperature is applied
afterwards, which is fine). Right frequencies, wrong side effect.

expect-fail: ch10_sampling
"""
# cell: ch10_sample_next_function
def sample_next(logits, temperature=1.0, top_k=None, generator=None):
    if top_k is not None and top_k < logits.shape[-1]:
        kth = logits.topk(top_k, dim=-1).values[:, -1:]
        logits[logits < kth] = float("-inf")
    probs = torch.softmax(logits / temperature, dim=-1)
    return torch.multinomial(probs, 1, generator=generator).squeeze(1)
