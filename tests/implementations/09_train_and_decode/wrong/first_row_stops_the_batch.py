"""Freezes finished rows correctly but stops the loop when the *first* row has produced <eos>
(`if done[0]`, a leftover of a decoder written for one sequence): the other rows are cut whenever
row 0 finishes before them.

expect-fail: ch09_decode_known
"""
# cell: ch09_greedy_decode
def greedy_decode(model, src, max_len, bos_id, eos_id, src_mask=None):
    model.eval()
    with torch.no_grad():
        memory = model.encode(src, src_mask)
        ys = torch.full((src.size(0), 1), bos_id, dtype=torch.long, device=src.device)
        done = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)
        for _ in range(max_len - 1):
            out = model.decode(ys, memory, src_mask, causal_mask(ys.size(1), device=src.device))
            nxt = model.generator(out[:, -1]).argmax(-1).masked_fill(done, eos_id)
            ys = torch.cat([ys, nxt[:, None]], dim=1)
            done = done | (nxt == eos_id)
            if done[0]:                                                # the mistake: done.all()
                break
    return ys
