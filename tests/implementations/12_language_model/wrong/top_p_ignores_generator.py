"""sample_top_p draws with torch's global generator, not with the one it is given: the samples do not follow the
generator's seed.

expect-fail: ch12_top_p_generator
"""
# cell: ch12_sample_top_p_function
def sample_top_p(logits, p, generator):
    probs = torch.softmax(logits, dim=-1)
    ranked = probs.sort(dim=-1, descending=True).values
    before = ranked.cumsum(dim=-1) - ranked
    smallest = ranked.gather(-1, (before < p).sum(dim=-1, keepdim=True) - 1)
    kept = probs * (probs >= smallest)
    return torch.multinomial(kept / kept.sum(dim=-1, keepdim=True), 1).squeeze(-1)
