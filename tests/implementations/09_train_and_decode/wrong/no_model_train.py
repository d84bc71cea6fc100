"""Never calls model.train(): after greedy_decode the model stays in eval mode and trains without dropout.

expect-fail: ch09_train_step_loss
"""
# cell: ch09_train_step
def train_step(model, batch, optimizer, criterion):
    optimizer.zero_grad()
    logits = model(batch["src"], batch["tgt_in"], batch["src_mask"], batch["tgt_mask"])
    loss = criterion(logits.reshape(-1, logits.size(-1)), batch["tgt_out"].reshape(-1))
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return loss.item()
