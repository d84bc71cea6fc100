"""make_batch with torch.nn.utils.rnn.pad_sequence and masks from the padded tensors; greedy_decode
that calls the whole model at every step (re-encoding the source each time: slower, same tokens)."""
# cell: ch09_make_batch
from torch.nn.utils.rnn import pad_sequence


def make_batch(src_seqs, tgt_seqs, pad_id, bos_id, eos_id, device=None):
    as_tensor = lambda seq: torch.tensor(seq, dtype=torch.long)
    src = pad_sequence([as_tensor(s) for s in src_seqs], batch_first=True, padding_value=pad_id)
    tgt_in = pad_sequence([as_tensor([bos_id] + t) for t in tgt_seqs], batch_first=True, padding_value=pad_id)
    tgt_out = pad_sequence([as_tensor(t + [eos_id]) for t in tgt_seqs], batch_first=True, padding_value=pad_id)
    size = tgt_in.size(1)
    future = torch.triu(torch.ones(size, size, dtype=torch.bool), diagonal=1)
    batch = {
        "src": src,
        "src_mask": (src != pad_id).view(src.size(0), 1, 1, -1),
        "tgt_in": tgt_in,
        "tgt_out": tgt_out,
        "tgt_mask": (tgt_in != pad_id).view(tgt_in.size(0), 1, 1, -1) & ~future,
    }
    return {k: v.to(device) for k, v in batch.items()}

# cell: ch09_greedy_decode
@torch.no_grad()
def greedy_decode(model, src, max_len, bos_id, eos_id, src_mask=None):
    model.eval()
    ys = torch.full((src.size(0), 1), bos_id, dtype=torch.long, device=src.device)
    alive = torch.ones(src.size(0), dtype=torch.bool, device=src.device)
    while ys.size(1) < max_len and alive.any():
        logits = model(src, ys, src_mask, causal_mask(ys.size(1), device=src.device))  # (batch, t, vocab)
        nxt = torch.where(alive, logits[:, -1].argmax(dim=-1), torch.full_like(alive, eos_id, dtype=torch.long))
        ys = torch.cat([ys, nxt.unsqueeze(1)], dim=1)
        alive = alive & (nxt != eos_id)
    return ys
