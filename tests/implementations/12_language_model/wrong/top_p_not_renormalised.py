"""sample_top_p draws by inverse CDF from the nucleus's probabilities without renormalising them: a uniform number
above the nucleus's total falls past it, onto the last token of the vocabulary.

expect-fail: ch12_top_p_nucleus, ch12_top_p_generator
"""
# cell: ch12_sample_top_p_function
def sample_top_p(logits, p, generator):
    probs = torch.softmax(logits, dim=-1)
    ranked, order = probs.sort(dim=-1, descending=True)
    before = ranked.cumsum(dim=-1) - ranked
    smallest = ranked.gather(-1, (before < p).sum(dim=-1, keepdim=True) - 1)
    kept = probs * (probs >= smallest)
    u = torch.rand(probs.shape[0], 1, generator=generator, device=probs.device, dtype=probs.dtype)
    index = torch.searchsorted(kept.cumsum(dim=-1), u)
    return index.clamp(max=probs.shape[-1] - 1).squeeze(-1)
