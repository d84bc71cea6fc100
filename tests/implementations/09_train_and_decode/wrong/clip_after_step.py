"""Clips the gradients after optimizer.step(): the update has already used the unclipped gradients.

expect-fail: ch09_train_step_update
"""
# cell: ch09_train_step
def train_step(model, batch, optimizer, criterion):
    model.train()
    optimizer.zero_grad()
    logits = model(batch["src"], batch["tgt_in"], batch["src_mask"], batch["tgt_mask"])
    loss = criterion(logits.reshape(-1, logits.size(-1)), batch["tgt_out"].reshape(-1))
    loss.backward()
    optimizer.step()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    return loss.item()
