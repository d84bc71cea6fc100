"""Labels not shifted: tgt_out is tgt_in itself, so each position is asked for the token it reads
(the training loss looks excellent, greedy decoding repeats <bos>).

expect-fail: ch09_batch_tensors
"""
# cell: ch09_make_batch
def make_batch(src_seqs, tgt_seqs, pad_id, bos_id, eos_id, device=None):
    L_src = max(len(s) for s in src_seqs)
    L_tgt = max(len(t) for t in tgt_seqs) + 1
    src = torch.tensor([s + [pad_id] * (L_src - len(s)) for s in src_seqs])
    tgt_in = torch.tensor([[bos_id] + t + [pad_id] * (L_tgt - 1 - len(t)) for t in tgt_seqs])
    tgt_out = tgt_in.clone()
    src_mask = (src != pad_id).unsqueeze(1).unsqueeze(2)
    tgt_mask = (tgt_in != pad_id).unsqueeze(1).unsqueeze(2) & torch.tril(torch.ones(L_tgt, L_tgt, dtype=torch.bool))
    return {"src": src.to(device), "src_mask": src_mask.to(device), "tgt_in": tgt_in.to(device),
            "tgt_out": tgt_out.to(device), "tgt_mask": tgt_mask.to(device)}
