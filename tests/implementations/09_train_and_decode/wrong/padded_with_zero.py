"""Pads with 0 instead of pad_id: right when the padding token happens to be 0 (as in the self-check),
wrong for any other vocabulary, and then the loss counts the padding (ignore_index=pad_id misses the zeros).

expect-fail: ch09_batch_tensors
"""
# cell: ch09_make_batch
def make_batch(src_seqs, tgt_seqs, pad_id, bos_id, eos_id, device=None):
    n = len(src_seqs)
    L_src = max(len(s) for s in src_seqs)
    L_tgt = max(len(t) for t in tgt_seqs) + 1
    src = torch.zeros(n, L_src, dtype=torch.long)
    tgt_in = torch.zeros(n, L_tgt, dtype=torch.long)
    tgt_out = torch.zeros(n, L_tgt, dtype=torch.long)
    for i, (s, t) in enumerate(zip(src_seqs, tgt_seqs)):
        src[i, :len(s)] = torch.tensor(s, dtype=torch.long)
        tgt_in[i, :len(t) + 1] = torch.tensor([bos_id] + t, dtype=torch.long)
        tgt_out[i, :len(t) + 1] = torch.tensor(t + [eos_id], dtype=torch.long)
    src_len = torch.tensor([len(s) for s in src_seqs])
    tgt_len = torch.tensor([len(t) + 1 for t in tgt_seqs])
    src_mask = (torch.arange(L_src)[None] < src_len[:, None])[:, None, None, :]
    tgt_mask = (torch.arange(L_tgt)[None] < tgt_len[:, None])[:, None, None, :] & torch.ones(L_tgt, L_tgt, dtype=torch.bool).tril()
    out = {"src": src, "src_mask": src_mask, "tgt_in": tgt_in, "tgt_out": tgt_out, "tgt_mask": tgt_mask}
    return {k: v.to(device) for k, v in out.items()}
