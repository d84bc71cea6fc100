"""tgt_mask has the contract's shape (batch, 1, L_tgt, L_tgt), but it is the causal mask repeated for
every sequence: the target's padding is not masked, so a real position may attend to the padding of a
shorter target. Right for the longest target of the batch, wrong for every other one.

expect-fail: ch09_batch_masks
"""
# cell: ch09_make_batch
def make_batch(src_seqs, tgt_seqs, pad_id, bos_id, eos_id, device=None):
    L_src = max(len(s) for s in src_seqs)
    L_tgt = max(len(t) for t in tgt_seqs) + 1
    src = torch.tensor([s + [pad_id] * (L_src - len(s)) for s in src_seqs])
    tgt_in = torch.tensor([[bos_id] + t + [pad_id] * (L_tgt - 1 - len(t)) for t in tgt_seqs])
    tgt_out = torch.tensor([t + [eos_id] + [pad_id] * (L_tgt - 1 - len(t)) for t in tgt_seqs])
    src_mask = (src != pad_id)[:, None, None, :]
    causal = torch.tril(torch.ones(L_tgt, L_tgt, dtype=torch.bool))
    tgt_mask = causal.expand(len(tgt_seqs), 1, L_tgt, L_tgt).clone()    # the mistake: no padding in it
    return {"src": src.to(device), "src_mask": src_mask.to(device), "tgt_in": tgt_in.to(device),
            "tgt_out": tgt_out.to(device), "tgt_mask": tgt_mask.to(device)}
