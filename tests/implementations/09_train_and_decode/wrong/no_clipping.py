"""No gradient clipping: identical while the gradient norm is below 1, a different step above it.

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
    return loss.item()
