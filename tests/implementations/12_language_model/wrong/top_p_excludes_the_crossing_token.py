"""sample_top_p keeps the tokens whose running sum is at most p (cumsum <= p), always keeping the first: the
token that makes the sum reach p is left out, so the kept set holds less than p.

expect-fail: ch12_top_p_nucleus
"""
# cell: ch12_sample_top_p_function
def sample_top_p(logits, p, generator):
    probs = torch.softmax(logits, dim=-1)
    ranked, order = probs.sort(dim=-1, descending=True)
    keep = ranked.cumsum(dim=-1) <= p
    keep[:, 0] = True
    ranked = ranked * keep
    choice = torch.multinomial(ranked / ranked.sum(dim=-1, keepdim=True), 1, generator=generator)
    return order.gather(-1, choice).squeeze(-1)
