"""Calls model.train() after the forward pass: the model is in train mode when train_step returns, but
the forward pass (and so the loss and its gradients) ran in whatever mode the model was in, eval() after
greedy_decode: no dropout while training.

expect-fail: ch09_train_step_loss
"""
# cell: ch09_train_step
def train_step(model, batch, optimizer, criterion):
    optimizer.zero_grad()
    logits = model(batch["src"], batch["tgt_in"], batch["src_mask"], batch["tgt_mask"])
    model.train()                                                      # the mistake: too late
    loss = criterion(logits.reshape(-1, logits.size(-1)), batch["tgt_out"].reshape(-1))
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return loss.item()
