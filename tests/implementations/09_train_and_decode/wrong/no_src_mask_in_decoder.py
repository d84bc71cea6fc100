"""The source mask goes to the encoder only: the cross-attention reads the source's padding.

expect-fail: ch09_decode_known, ch09_decode_real
"""
# cell: ch09_greedy_decode
def greedy_decode(model, src, max_len, bos_id, eos_id, src_mask=None):
    model.eval()
    with torch.no_grad():
        memory = model.encode(src, src_mask)
        ys = torch.full((src.size(0), 1), bos_id, dtype=torch.long, device=src.device)
        finished = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)
        while ys.size(1) < max_len and not finished.all():
            out = model.decode(ys, memory, None, causal_mask(ys.size(1), device=src.device))
            nxt = model.generator(out[:, -1]).argmax(-1)
            nxt = torch.where(finished, torch.full_like(nxt, eos_id), nxt)
            ys = torch.cat([ys, nxt[:, None]], dim=1)
            finished |= nxt == eos_id
    return ys
