"""Ignores the criterion it is given and calls F.cross_entropy without ignore_index: the padding
positions are counted in the loss and in its gradient.

expect-fail: ch09_train_step_loss, ch09_train_step_update
"""
# cell: ch09_train_step
import torch.nn.functional as F


def train_step(model, batch, optimizer, criterion):
    model.train()
    optimizer.zero_grad()
    logits = model(batch["src"], batch["tgt_in"], batch["src_mask"], batch["tgt_mask"])
    loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), batch["tgt_out"].reshape(-1))
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return loss.item()
