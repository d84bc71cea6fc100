"""sample_top_p sets the logits outside the nucleus to 0 instead of -inf before the softmax: exp(0) = 1, so every
token outside the nucleus keeps a share of the probability.

expect-fail: ch12_top_p_nucleus, ch12_top_p_generator
"""
# cell: ch12_sample_top_p_function
def sample_top_p(logits, p, generator):
    probs = torch.softmax(logits, dim=-1)
    ranked, order = probs.sort(dim=-1, descending=True)
    before = ranked.cumsum(dim=-1) - ranked
    smallest = ranked.gather(-1, (before < p).sum(dim=-1, keepdim=True) - 1)
    masked = logits.masked_fill(probs < smallest, 0.0)
    return torch.multinomial(torch.softmax(masked, dim=-1), 1, generator=generator).squeeze(-1)
