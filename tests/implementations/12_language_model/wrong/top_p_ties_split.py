"""sample_top_p keeps the nucleus in sorted order and scatters it back, with no rule for ties: of several tokens
exactly as probable as the one that crosses p, it keeps those the sort happened to put first.

expect-fail: ch12_top_p_nucleus
"""
# cell: ch12_sample_top_p_function
def sample_top_p(logits, p, generator):
    probs = torch.softmax(logits, dim=-1)
    ranked, order = probs.sort(dim=-1, descending=True)
    keep_sorted = (ranked.cumsum(dim=-1) - ranked) < p
    keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
    kept = probs * keep
    return torch.multinomial(kept / kept.sum(dim=-1, keepdim=True), 1, generator=generator).squeeze(-1)
