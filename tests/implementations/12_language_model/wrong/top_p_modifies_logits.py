"""sample_top_p masks the caller's logits in place (logits[...] = -inf): the caller's scores change, and the next
call with them draws from another distribution.

expect-fail: ch12_top_p_nucleus, ch12_top_p_generator
"""
# cell: ch12_sample_top_p_function
def sample_top_p(logits, p, generator):
    probs = torch.softmax(logits, dim=-1)
    ranked = probs.sort(dim=-1, descending=True).values
    before = ranked.cumsum(dim=-1) - ranked
    smallest = ranked.gather(-1, (before < p).sum(dim=-1, keepdim=True) - 1)
    logits[probs < smallest] = -math.inf
    return torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=generator).squeeze(-1)
