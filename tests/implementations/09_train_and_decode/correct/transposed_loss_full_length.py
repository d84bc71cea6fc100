"""train_step that gives the criterion the logits as (batch, vocab, L_tgt) (CrossEntropyLoss's K-dim form)
and clips by hand; greedy_decode that never stops early (always max_len tokens, finished rows padded with
eos); make_batch with nested list comprehensions."""
# cell: ch09_make_batch
def make_batch(src_seqs, tgt_seqs, pad_id, bos_id, eos_id, device=None):
    ls = max(map(len, src_seqs))
    lt = 1 + max(map(len, tgt_seqs))
    pad = lambda seq, n: list(seq) + [pad_id] * (n - len(seq))
    src = torch.tensor([pad(s, ls) for s in src_seqs], dtype=torch.long, device=device)
    tgt_in = torch.tensor([pad([bos_id, *t], lt) for t in tgt_seqs], dtype=torch.long, device=device)
    tgt_out = torch.tensor([pad([*t, eos_id], lt) for t in tgt_seqs], dtype=torch.long, device=device)
    src_mask = torch.tensor([[[[j < len(s) for j in range(ls)]]] for s in src_seqs], device=device)
    tgt_mask = torch.tensor([[[[j <= i and j <= len(t) for j in range(lt)] for i in range(lt)]] for t in tgt_seqs],
                            device=device)
    return dict(src=src, src_mask=src_mask, tgt_in=tgt_in, tgt_out=tgt_out, tgt_mask=tgt_mask)

# cell: ch09_train_step
def train_step(model, batch, optimizer, criterion):
    model.train()
    for p in model.parameters():
        p.grad = None
    logits = model(batch["src"], batch["tgt_in"], src_mask=batch["src_mask"], tgt_mask=batch["tgt_mask"])
    loss = criterion(logits.transpose(1, 2), batch["tgt_out"])        # (batch, vocab, L) against (batch, L)
    loss.backward()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    total = torch.sqrt(sum((g ** 2).sum() for g in grads))
    factor = torch.clamp(1.0 / (total + 1e-6), max=1.0)
    for g in grads:
        g.mul_(factor)
    optimizer.step()
    return loss.item()

# cell: ch09_greedy_decode
def greedy_decode(model, src, max_len, bos_id, eos_id, src_mask=None):
    model.eval()
    with torch.no_grad():
        memory = model.encode(src, src_mask)
        tokens = [torch.full((src.size(0),), bos_id, dtype=torch.long, device=src.device)]
        ended = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)
        for t in range(1, max_len):
            ys = torch.stack(tokens, dim=1)
            hidden = model.decode(ys, memory, src_mask, causal_mask(t, device=src.device))
            guess = model.generator(hidden)[:, -1].argmax(-1)
            guess[ended] = eos_id
            ended = ended | (guess == eos_id)
            tokens.append(guess)
        return torch.stack(tokens, dim=1)
