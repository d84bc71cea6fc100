"""The lesson's bucket decoder behind the exercise's signature: max_len - 1 steps of argmax, every row
to the end, no row frozen after its <eos> and no early stop. Right for a model that never produces
<eos> early; a row that finishes before the others goes on with whatever the model predicts.

expect-fail: ch09_decode_known, ch09_decode_real
"""
# cell: ch09_greedy_decode
def greedy_decode(model, src, max_len, bos_id, eos_id, src_mask=None):
    model.eval()
    with torch.no_grad():
        memory = model.encode(src, src_mask)
        ys = torch.full_like(src[:, :1], bos_id)
        for _ in range(max_len - 1):
            last = model.decode(ys, memory, src_mask, causal_mask(ys.size(1), device=src.device))[:, -1]
            ys = torch.cat([ys, model.generator(last).argmax(-1, keepdim=True)], dim=1)
    return ys
