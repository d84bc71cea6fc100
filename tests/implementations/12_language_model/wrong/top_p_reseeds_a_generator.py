"""sample_top_p copies the generator (a new one seeded with its initial seed): every call with the same generator
draws the same tokens, so a text sampled token by token repeats its choices.

expect-fail: ch12_top_p_generator
"""
# cell: ch12_sample_top_p_function
def sample_top_p(logits, p, generator):
    mine = torch.Generator(device=logits.device).manual_seed(generator.initial_seed())
    probs = torch.softmax(logits, dim=-1)
    ranked = probs.sort(dim=-1, descending=True).values
    before = ranked.cumsum(dim=-1) - ranked
    smallest = ranked.gather(-1, (before < p).sum(dim=-1, keepdim=True) - 1)
    kept = probs * (probs >= smallest)
    return torch.multinomial(kept / kept.sum(dim=-1, keepdim=True), 1, generator=mine).squeeze(-1)
