"""optimizer.zero_grad() forgotten: gradients add up across steps, so the second step uses the sum of
both steps' gradients.

expect-fail: ch09_train_step_update
"""
# cell: ch09_train_step
def train_step(model, batch, optimizer, criterion):
    model.train()
    logits = model(batch["src"], batch["tgt_in"], batch["src_mask"], batch["tgt_mask"])
    loss = criterion(logits.reshape(-1, logits.size(-1)), batch["tgt_out"].reshape(-1))
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return loss.item()
