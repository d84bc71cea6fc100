"""train_step with flatten(0, 1) and zero_grad(set_to_none=True); greedy_decode that keeps each row as a
Python list and stops a row at its own eos; make_batch that fills preallocated tensors row by row."""
# cell: ch09_make_batch
def make_batch(src_seqs, tgt_seqs, pad_id, bos_id, eos_id, device=None):
    n = len(src_seqs)
    ls, lt = max(len(s) for s in src_seqs), max(len(t) for t in tgt_seqs) + 1
    batch = {
        "src": torch.full((n, ls), pad_id, dtype=torch.long),
        "tgt_in": torch.full((n, lt), pad_id, dtype=torch.long),
        "tgt_out": torch.full((n, lt), pad_id, dtype=torch.long),
        "src_mask": torch.zeros(n, 1, 1, ls, dtype=torch.bool),
        "tgt_mask": torch.zeros(n, 1, lt, lt, dtype=torch.bool),
    }
    for b in range(n):
        s, t = src_seqs[b], tgt_seqs[b]
        for j, tok in enumerate(s):
            batch["src"][b, j] = tok
            batch["src_mask"][b, 0, 0, j] = True
        for j, tok in enumerate([bos_id] + t):
            batch["tgt_in"][b, j] = tok
        for j, tok in enumerate(t + [eos_id]):
            batch["tgt_out"][b, j] = tok
        for i in range(lt):
            for j in range(min(i, len(t)) + 1):
                batch["tgt_mask"][b, 0, i, j] = True
    return {k: v.to(device) for k, v in batch.items()}

# cell: ch09_train_step
def train_step(model, batch, optimizer, criterion):
    model.train()
    optimizer.zero_grad(set_to_none=True)
    logits = model(batch["src"], batch["tgt_in"], batch["src_mask"], batch["tgt_mask"])
    loss = criterion(logits.flatten(0, 1), batch["tgt_out"].flatten())
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    optimizer.step()
    return float(loss.item())

# cell: ch09_greedy_decode
def greedy_decode(model, src, max_len, bos_id, eos_id, src_mask=None):
    model.eval()
    with torch.no_grad():
        memory = model.encode(src, src_mask)
        rows = [[bos_id] for _ in range(src.size(0))]
        while len(rows[0]) < max_len and not all(eos_id in r for r in rows):
            ys = torch.tensor(rows, dtype=torch.long, device=src.device)
            out = model.generator(model.decode(ys, memory, src_mask, causal_mask(ys.size(1), device=src.device)))
            best = out[:, -1].argmax(-1).tolist()
            for r, tok in zip(rows, best):
                r.append(eos_id if eos_id in r else tok)
        return torch.tensor(rows, dtype=torch.long, device=src.device)
