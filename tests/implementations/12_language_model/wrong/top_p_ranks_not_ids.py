"""sample_top_p draws from the sorted probabilities and returns the position drawn, a rank, without mapping it back
to a token id through the indices sort returned: it mostly returns 0, 1, 2.

expect-fail: ch12_top_p_nucleus, ch12_top_p_generator
"""
# cell: ch12_sample_top_p_function
def sample_top_p(logits, p, generator):
    probs = torch.softmax(logits, dim=-1)
    ranked, _ = probs.sort(dim=-1, descending=True)
    before = ranked.cumsum(dim=-1) - ranked
    ranked = ranked * (before < p)
    return torch.multinomial(ranked / ranked.sum(dim=-1, keepdim=True), 1, generator=generator).squeeze(-1)
