"""No <bos>: the decoder reads the target itself (padded), so position t reads the token it must predict.

expect-fail: ch09_batch_tensors
"""
# cell: ch09_make_batch
def make_batch(src_seqs, tgt_seqs, pad_id, bos_id, eos_id, device=None):
    L_src = max(len(s) for s in src_seqs)
    L_tgt = max(len(t) for t in tgt_seqs) + 1
    src = torch.tensor([s + [pad_id] * (L_src - len(s)) for s in src_seqs])
    tgt_in = torch.tensor([t + [pad_id] * (L_tgt - len(t)) for t in tgt_seqs])
    tgt_out = torch.tensor([t + [eos_id] + [pad_id] * (L_tgt - 1 - len(t)) for t in tgt_seqs])
    lengths = torch.tensor([len(t) + 1 for t in tgt_seqs])
    real = torch.arange(L_tgt)[None, :] < lengths[:, None]
    src_mask = (src != pad_id)[:, None, None, :]
    tgt_mask = real[:, None, None, :] & torch.tril(torch.ones(L_tgt, L_tgt, dtype=torch.bool))
    return {"src": src.to(device), "src_mask": src_mask.to(device), "tgt_in": tgt_in.to(device),
            "tgt_out": tgt_out.to(device), "tgt_mask": tgt_mask.to(device)}
