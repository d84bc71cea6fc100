"""Appends eos_id to the caller's target lists in place: the tensors are right, but the data set grows
one <eos> per epoch.

expect-fail: ch09_batch_tensors
"""
# cell: ch09_make_batch
def make_batch(src_seqs, tgt_seqs, pad_id, bos_id, eos_id, device=None):
    L_src = max(len(s) for s in src_seqs)
    L_tgt = max(len(t) for t in tgt_seqs) + 1
    labels = []
    for t in tgt_seqs:
        t.append(eos_id)
        labels.append(t)
    src = torch.tensor([s + [pad_id] * (L_src - len(s)) for s in src_seqs])
    tgt_in = torch.tensor([[bos_id] + t[:-1] + [pad_id] * (L_tgt - len(t)) for t in labels])
    tgt_out = torch.tensor([t + [pad_id] * (L_tgt - len(t)) for t in labels])
    src_mask = (src != pad_id)[:, None, None, :]
    tgt_mask = (tgt_in != pad_id)[:, None, None, :] & torch.tril(torch.ones(L_tgt, L_tgt, dtype=torch.bool))
    return {"src": src.to(device), "src_mask": src_mask.to(device), "tgt_in": tgt_in.to(device),
            "tgt_out": tgt_out.to(device), "tgt_mask": tgt_mask.to(device)}
