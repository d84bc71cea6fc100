"""sample_top_p computes one cut-off probability for the whole batch (the smallest of the rows' crossing
probabilities) instead of one per row: rows whose nucleus is small keep too many tokens.

expect-fail: ch12_top_p_nucleus, ch12_top_p_generator
"""
# cell: ch12_sample_top_p_function
def sample_top_p(logits, p, generator):
    probs = torch.softmax(logits, dim=-1)
    ranked = probs.sort(dim=-1, descending=True).values
    before = ranked.cumsum(dim=-1) - ranked
    cutoff = ranked[before < p].min()
    kept = probs * (probs >= cutoff)
    return torch.multinomial(kept / kept.sum(dim=-1, keepdim=True), 1, generator=generator).squeeze(-1)
