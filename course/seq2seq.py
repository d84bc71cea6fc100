"""Chapter 09's toy task and training code: reverse a string of digits with the course's Transformer.

The lesson (chapters/09_training.md) and the benchmark (tools/bench_train.py) import this module, so that
the page and `make bench` train the same model the same way. Everything is seeded: the same call gives
the same numbers on the same machine.

Tokens: 0 = <pad>, 1 = <bos>, 2 = <eos>, and the digits 0..9 are tokens 3..12. A source is a digit string
of length 4..10 (no BOS, no EOS); its target is the same digits reversed. Batches are padded on the right.

Conventions of the course: batch-first; boolean masks, True = may attend.
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, field

import torch
from torch import nn

from course.provided import Transformer, causal_mask, padding_mask

PAD, BOS, EOS = 0, 1, 2
FIRST_DIGIT = 3                # digit d is token FIRST_DIGIT + d
VOCAB = FIRST_DIGIT + 10       # 13 tokens, the same table for the source and the target


# --- the task --------------------------------------------------------------------------------------------


def random_digits(rng, min_len, max_len):
    """One source: a list of digit tokens, its length uniform in [min_len, max_len]."""
    length = rng.randint(min_len, max_len)
    return [FIRST_DIGIT + rng.randrange(10) for _ in range(length)]


def reverse_pairs(count, seed, min_len=4, max_len=10, exclude=frozenset()):
    """`count` (source, target) pairs of token lists, target = source reversed; sources in `exclude`
    (a set of tuples) are skipped, so a training stream never contains a held-out sequence."""
    rng = random.Random(seed)
    pairs = []
    while len(pairs) < count:
        src = random_digits(rng, min_len, max_len)
        if tuple(src) not in exclude:
            pairs.append((src, src[::-1]))
    return pairs


def show(tokens):
    """Token ids -> a readable string: digits as digits, specials as <bos>, <eos>, <pad>."""
    names = {PAD: "<pad>", BOS: "<bos>", EOS: "<eos>"}
    return " ".join(names.get(t, str(t - FIRST_DIGIT)) for t in tokens)


# --- batches: padding, masks and teacher forcing ----------------------------------------------------------


def pad_to(seqs, length, pad_id):
    """A list of token lists -> a (batch, length) int64 tensor, each row padded on the right with pad_id."""
    rows = [seq + [pad_id] * (length - len(seq)) for seq in seqs]
    return torch.tensor(rows, dtype=torch.long)


def make_batch(src_seqs, tgt_seqs, pad_id, bos_id, eos_id, device=None):
    """Pad a list of (source, target) token lists into the tensors that one training step needs.

    Returns a dict:
      src       (batch, L_src)               source ids, padded with pad_id
      src_mask  (batch, 1, 1, L_src)         True at real source tokens
      tgt_in    (batch, L_tgt)               BOS + target: what the decoder reads (teacher forcing)
      tgt_out   (batch, L_tgt)               target + EOS: what it must predict at each position
      tgt_mask  (batch, 1, L_tgt, L_tgt)     causal AND real tokens of tgt_in
    with L_src the longest source and L_tgt = 1 + the longest target. tgt_in and tgt_out are padded
    with pad_id; the loss ignores pad_id in tgt_out.
    """
    src_lengths = [len(s) for s in src_seqs]
    tgt_lengths = [len(t) + 1 for t in tgt_seqs]                 # one more token: BOS in front, EOS behind
    src = pad_to(src_seqs, max(src_lengths), pad_id)              # (batch, L_src)
    decoder_in = [[bos_id] + t for t in tgt_seqs]                 # shifted right: BOS, y1, ..., yn
    labels = [t + [eos_id] for t in tgt_seqs]                     # shifted left:  y1, ..., yn, EOS
    tgt_in = pad_to(decoder_in, max(tgt_lengths), pad_id)         # (batch, L_tgt)
    tgt_out = pad_to(labels, max(tgt_lengths), pad_id)            # (batch, L_tgt)
    src_mask = padding_mask(src_lengths, src.size(1))             # (batch, 1, 1, L_src)
    tgt_pad = padding_mask(tgt_lengths, tgt_in.size(1))           # (batch, 1, 1, L_tgt): keys that are real
    tgt_mask = tgt_pad & causal_mask(tgt_in.size(1))              # (batch, 1, L_tgt, L_tgt)
    batch = dict(src=src, src_mask=src_mask, tgt_in=tgt_in, tgt_out=tgt_out, tgt_mask=tgt_mask)
    return {name: t.to(device) for name, t in batch.items()}


# --- one step of training ---------------------------------------------------------------------------------


def train_step(model, batch, optimizer, criterion, clip=1.0):
    """Teacher-forced forward pass, loss, backward, gradient clipping, one optimizer step.

    criterion: e.g. nn.CrossEntropyLoss(ignore_index=PAD, label_smoothing=0.1). Returns the loss as a float.
    """
    model.train()
    logits = model(batch["src"], batch["tgt_in"], batch["src_mask"], batch["tgt_mask"])  # (batch, L_tgt, vocab)
    vocab = logits.size(-1)
    loss = criterion(logits.view(-1, vocab), batch["tgt_out"].view(-1))  # (batch * L_tgt, vocab) vs (batch * L_tgt,)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if clip is not None:
        nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimizer.step()
    return loss.item()


def warmup_then_decay(warmup, total):
    """The learning-rate factor at each step: linear warm-up from ~0 to 1 over `warmup` steps, then a cosine
    down to 0 at step `total`. Use with torch.optim.lr_scheduler.LambdaLR."""

    def factor(step):
        if step < warmup:
            return (step + 1) / warmup
        progress = min(1.0, (step - warmup) / max(1, total - warmup))
        return 0.5 * (1.0 + math.cos(math.pi * progress))

    return factor


# --- greedy decoding and exact match ----------------------------------------------------------------------


@torch.no_grad()
def greedy_decode(model, src, max_len, bos_id, eos_id, src_mask=None):
    """Generate token by token, always taking the most likely next token. Returns (batch, <= max_len) ids
    starting with bos_id; after its own EOS a sequence is frozen and padded with eos_id. Stops early when
    every sequence has produced EOS. Leaves the model in eval() mode, without gradients."""
    model.eval()
    memory = model.encode(src, src_mask)                                   # (batch, L_src, d_model), once
    out = torch.full((src.size(0), 1), bos_id, dtype=torch.long, device=src.device)  # (batch, 1): BOS
    finished = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)        # (batch,)
    while out.size(1) < max_len and not finished.all():
        step_mask = causal_mask(out.size(1), device=src.device)            # (t, t)
        features = model.decode(out, memory, src_mask, step_mask)          # (batch, t, d_model)
        scores = model.generator(features[:, -1])                          # (batch, vocab): the last position only
        following = torch.where(finished, eos_id, scores.argmax(dim=-1))   # (batch,): frozen rows repeat EOS
        out = torch.cat([out, following.unsqueeze(1)], dim=1)              # (batch, t + 1)
        finished = finished | (following == eos_id)
    return out


def strip(tokens, eos_id=EOS, bos_id=BOS):
    """A decoded row -> the tokens between BOS and the first EOS (a row without EOS keeps all of them)."""
    tokens = list(tokens)
    if tokens and tokens[0] == bos_id:
        tokens = tokens[1:]
    return tokens[: tokens.index(eos_id)] if eos_id in tokens else tokens


def exact_match(model, pairs, device=None, batch_size=500, extra_padding=0, use_src_mask=True):
    """The share of (source, target) pairs whose greedy decoding is exactly the target followed by EOS.

    extra_padding: pad every source with that many more PAD tokens than its batch needs (a model that
    respects the padding mask gives the same answers); use_src_mask=False decodes without the source mask.
    Returns (accuracy, decoded rows as lists)."""
    decoded = []
    for start in range(0, len(pairs), batch_size):
        chunk = pairs[start:start + batch_size]
        lengths = [len(src) for src, _ in chunk]
        width = max(lengths) + extra_padding
        src = pad_to([src for src, _ in chunk], width, PAD).to(device)             # (batch, L_src)
        src_mask = padding_mask(lengths, width).to(device) if use_src_mask else None  # (batch, 1, 1, L_src)
        longest = max(len(tgt) for _, tgt in chunk)
        rows = greedy_decode(model, src, longest + 2, BOS, EOS, src_mask)          # BOS + target + EOS at most
        decoded += rows.tolist()
    hits = [strip(row) == tgt and EOS in row for row, (_, tgt) in zip(decoded, pairs)]
    return sum(hits) / len(pairs), decoded


# --- the whole training run -------------------------------------------------------------------------------


@dataclass
class Config:
    """The lesson's configuration: a small model, a large learning rate with a short warm-up, a fixed
    number of steps (the page must be the same on every machine, so it does not stop on a timer)."""

    d_model: int = 64
    num_heads: int = 4
    num_layers: int = 2
    d_ff: int = 128
    dropout: float = 0.0
    batch_size: int = 64
    steps: int = 600
    lr: float = 2e-3
    warmup: int = 100
    label_smoothing: float = 0.1
    clip: float = 1.0
    eval_every: int = 50
    min_len: int = 4
    max_len: int = 10
    seed: int = 0
    held_out: int = 1000
    init: str = "xavier"          # "xavier": Xavier-uniform weight matrices; "default": PyTorch's defaults


@dataclass
class History:
    """What a training run records: the loss at every step, the exact match at every evaluation."""

    steps: list = field(default_factory=list)
    losses: list = field(default_factory=list)
    eval_steps: list = field(default_factory=list)
    accuracies: list = field(default_factory=list)
    eval_seconds: list = field(default_factory=list)  # training seconds (evaluations excluded) at each evaluation
    seconds: float = 0.0                              # training seconds in all, evaluations excluded


def new_model(config, device=None):
    """The course's Transformer with the configuration's sizes, seeded."""
    torch.manual_seed(config.seed)
    model = Transformer(VOCAB, VOCAB, d_model=config.d_model, num_heads=config.num_heads,
                        num_layers=config.num_layers, d_ff=config.d_ff, dropout=config.dropout,
                        max_len=2 * config.max_len + 2)
    if config.init == "xavier":
        for weight in model.parameters():
            if weight.dim() > 1:          # matrices and embedding tables; biases and LayerNorms keep theirs
                nn.init.xavier_uniform_(weight)
    return model.to(device)


def held_out_pairs(config):
    """The fixed evaluation set, drawn with its own seed; training never sees these sources."""
    return reverse_pairs(config.held_out, seed=10_000 + config.seed, min_len=config.min_len, max_len=config.max_len)


def train(config, device=None, batch_fn=make_batch, eval_pairs=None, stop=None, log=None):
    """Train a fresh model on fresh random batches for config.steps steps (or only the first `stop` steps
    of that schedule). Returns (model, history).

    batch_fn(src_seqs, tgt_seqs, pad_id, bos_id, eos_id, device) builds each batch (the failure clinic passes
    broken ones). Every config.eval_every steps (and at the end) the model greedily decodes eval_pairs and
    the exact match is recorded; evaluation time is not counted in the training seconds."""
    model = new_model(config, device)
    eval_pairs = held_out_pairs(config) if eval_pairs is None else eval_pairs
    exclude = frozenset(tuple(src) for src, _ in eval_pairs)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr, betas=(0.9, 0.98), eps=1e-9)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_then_decay(config.warmup, config.steps))
    criterion = nn.CrossEntropyLoss(ignore_index=PAD, label_smoothing=config.label_smoothing)
    history, clock = History(), 0.0
    last = config.steps if stop is None else stop
    for step in range(1, last + 1):
        started = time.perf_counter()
        pairs = reverse_pairs(config.batch_size, seed=1_000_003 * config.seed + step, min_len=config.min_len,
                              max_len=config.max_len, exclude=exclude)
        batch = batch_fn([s for s, _ in pairs], [t for _, t in pairs], PAD, BOS, EOS, device)
        loss = train_step(model, batch, optimizer, criterion, clip=config.clip)
        schedule.step()
        clock += time.perf_counter() - started
        history.steps.append(step)
        history.losses.append(loss)
        if step % config.eval_every == 0 or step == last:
            accuracy, _ = exact_match(model, eval_pairs, device)
            history.eval_steps.append(step)
            history.accuracies.append(accuracy)
            history.eval_seconds.append(clock)
            if log:
                log(f"step {step:5d}  loss {loss:.4f}  exact match {accuracy:.3f}  {clock:.1f} s")
    history.seconds = clock
    return model, history
