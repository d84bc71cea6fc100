"""No torch.no_grad(): every step records a graph that is never used (memory and time).

expect-fail: ch09_decode_modes
"""
# cell: ch09_greedy_decode
def greedy_decode(model, src, max_len, bos_id, eos_id, src_mask=None):
    model.eval()
    memory = model.encode(src, src_mask)
    ys = torch.full((src.size(0), 1), bos_id, dtype=torch.long, device=src.device)
    finished = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)
    while ys.size(1) < max_len and not finished.all():
        out = model.decode(ys, memory, src_mask, causal_mask(ys.size(1), device=src.device))
        nxt = model.generator(out[:, -1]).argmax(-1)
        nxt[finished] = eos_id
        ys = torch.cat([ys, nxt[:, None]], dim=1)
        finished |= nxt == eos_id
    return ys
