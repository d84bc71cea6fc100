"""sample_top_p keeps a token when the more probable tokens hold at most p (<=) instead of less than p: where a
prefix holds exactly p, the next tokens join the nucleus although it already reaches p. No row with a prefix
mass exactly p appeared in the hidden tests, and this scored full marks (issue 40); the row 0.5, 0.25, 0.0625, ...
at p = 0.75 (exact in float32 and float64) catches it.

expect-fail: ch12_top_p_nucleus
"""
# cell: ch12_sample_top_p_function
def sample_top_p(logits, p, generator):
    probs = torch.softmax(logits, dim=-1)                               # (batch, vocab)
    ranked = probs.sort(dim=-1, descending=True).values
    before = ranked.cumsum(dim=-1) - ranked
    crossing = (before <= p).sum(dim=-1, keepdim=True) - 1
    smallest_kept = ranked.gather(-1, crossing)
    kept = probs * (probs >= smallest_kept)
    kept = kept / kept.sum(dim=-1, keepdim=True)
    return torch.multinomial(kept, 1, generator=generator).squeeze(-1)
