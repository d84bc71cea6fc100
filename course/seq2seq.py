"""Chapter 09's toy task and training code: reverse a string of digits with the course's Transformer.

The lesson (chapters/09_training.md) and the benchmark (tools/bench_train.py) import this module, so that
the page and `make bench` train the same model the same way. Everything is seeded: the same call gives
the same numbers on the same machine.

Tokens: 0 = <pad>, 1 = <bos>, 2 = <eos>, and the digits 0..9 are tokens 3..12. A source is a digit string
of length 4..10 (no BOS, no EOS); its target is the same digits reversed.

Training uses *buckets*: each step draws one length and a batch of sources of that length, so no batch is
ever padded, the encoder needs no mask and the decoder only the causal one. Decoding a bucket runs a known
number of steps (the reversal of L digits is L digits and <eos>). The general case, batches of mixed lengths
padded on the right with their padding masks, a training step on such a batch, and greedy decoding in which
each row stops at its own <eos> within a length limit, is chapter 09's exercise, and is not written here.

Conventions of the course: batch-first; boolean masks, True = may attend.
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, field

import torch
from torch import nn

from course.provided import Transformer, causal_mask

PAD, BOS, EOS = 0, 1, 2
FIRST_DIGIT = 3                # digit d is token FIRST_DIGIT + d
VOCAB = FIRST_DIGIT + 10       # 13 tokens, the same table for the source and the target


# --- the task -----------------------------------------------------------------------------------------------


def random_digits(rng, min_len, max_len):
    """One source: a list of digit tokens, its length uniform in [min_len, max_len]."""
    length = rng.randint(min_len, max_len)
    return [FIRST_DIGIT + rng.randrange(10) for _ in range(length)]


def reverse_pairs(count, seed, min_len=4, max_len=10, exclude=frozenset()):
    """`count` (source, target) pairs of token lists, target = source reversed; sources in `exclude`
    (a set of tuples) are skipped, so a training stream never contains a held-out sequence."""
    rng = random.Random(seed)
    pairs: list[tuple[list[int], list[int]]] = []
    while len(pairs) < count:
        src = random_digits(rng, min_len, max_len)
        if tuple(src) not in exclude:
            pairs.append((src, src[::-1]))
    return pairs


def show(tokens):
    """Token ids -> a readable string: digits as digits, specials as <bos>, <eos>, <pad>."""
    names = {PAD: "<pad>", BOS: "<bos>", EOS: "<eos>"}
    return " ".join(names.get(t, str(t - FIRST_DIGIT)) for t in tokens)


# --- buckets: batches of one length, shifted for teacher forcing --------------------------------------------


def bucket_sources(rng, length, count, exclude=frozenset()):
    """`count` random sources of exactly `length` digits each (token lists), none of them in `exclude`."""
    sources: list[list[int]] = []
    while len(sources) < count:
        src = [FIRST_DIGIT + rng.randrange(10) for _ in range(length)]
        if tuple(src) not in exclude:
            sources.append(src)
    return sources


@dataclass
class Bucket:
    """A training batch of B sources of one length L: a rectangle with no padding anywhere."""

    src: torch.Tensor       # (B, L)          the sources
    tgt_in: torch.Tensor    # (B, L + 1)      <bos> + reversal: what the decoder reads
    tgt_out: torch.Tensor   # (B, L + 1)      reversal + <eos>: what it must predict, position by position
    tgt_mask: torch.Tensor  # (L + 1, L + 1)  the causal mask, the same for every row


def bucket_batch(sources, device=None):
    """Sources of one length (token lists) -> a Bucket: their reversals shifted both ways for teacher forcing."""
    src = torch.tensor(sources)                                # (B, L); raises if the lengths differ
    target = src.flip(1)                                       # (B, L): the task itself, each row reversed
    bos = torch.full_like(src[:, :1], BOS)                     # (B, 1)
    eos = torch.full_like(src[:, :1], EOS)                     # (B, 1)
    tgt_in = torch.cat([bos, target], dim=1)                   # shifted right: <bos>, y1, ..., yL
    tgt_out = torch.cat([target, eos], dim=1)                  # shifted left:  y1, ..., yL, <eos>
    causal = causal_mask(tgt_in.size(1))                       # (L + 1, L + 1): no padding, nothing else to hide
    return Bucket(src.to(device), tgt_in.to(device), tgt_out.to(device), causal.to(device))


def pad_to(seqs, length, pad_id):
    """A list of token lists -> a (batch, length) int64 tensor, each row padded on the right with pad_id
    (the lesson's padding experiments; training never pads)."""
    rows = [seq + [pad_id] * (length - len(seq)) for seq in seqs]
    return torch.tensor(rows, dtype=torch.long)


def warmup_then_decay(warmup, total):
    """The learning-rate factor at each step: linear warm-up from ~0 to 1 over `warmup` steps, then a cosine
    down to 0 at step `total`. Use with torch.optim.lr_scheduler.LambdaLR."""

    def factor(step):
        if step < warmup:
            return (step + 1) / warmup
        progress = min(1.0, (step - warmup) / max(1, total - warmup))
        return 0.5 * (1.0 + math.cos(math.pi * progress))

    return factor


# --- decoding a bucket, and exact match ---------------------------------------------------------------------


def decode_bucket(model, src, src_mask=None):
    """Greedy decoding for the reversal task: <bos>, then src.size(1) + 1 tokens, each the most likely next
    one (a source of L digits has L digits and <eos> to write, so that is the whole answer; a shorter padded
    source has finished earlier, and `strip` cuts each row at its first <eos>). No row is stopped or frozen.
    Call it in eval mode and under torch.no_grad(), as exact_match does."""
    memory = model.encode(src, src_mask)                                  # (B, L, d_model): once per source
    ys = torch.full_like(src[:, :1], BOS)                                 # (B, 1): every row starts with <bos>
    for _ in range(src.size(1) + 1):
        reading = causal_mask(ys.size(1), device=src.device)              # (t, t)
        last = model.decode(ys, memory, src_mask, reading)[:, -1]         # (B, d_model): the newest position
        ys = torch.cat([ys, model.generator(last).argmax(-1, keepdim=True)], dim=1)  # (B, t + 1)
    return ys


def strip(tokens, eos_id=EOS, bos_id=BOS):
    """A decoded row -> the tokens between BOS and the first EOS (a row without EOS keeps all of them)."""
    tokens = list(tokens)
    if tokens and tokens[0] == bos_id:
        tokens = tokens[1:]
    return tokens[: tokens.index(eos_id)] if eos_id in tokens else tokens


def exact_match(model, pairs, device=None):
    """The share of (source, target) pairs whose greedy decoding is exactly the target followed by EOS, and
    the decoded rows (lists, in the order of `pairs`). Sources of one length are decoded together, as one
    bucket. Switches the model to eval mode (no dropout) and records no gradients; a training loop that
    evaluates must switch back to train mode."""
    model.eval()
    by_length: dict[int, list[int]] = {}
    for index, (src, _) in enumerate(pairs):
        by_length.setdefault(len(src), []).append(index)
    decoded: list[list[int]] = [[] for _ in pairs]
    with torch.no_grad():
        for indices in by_length.values():
            src = torch.tensor([pairs[i][0] for i in indices], device=device)   # (B, L): one length, no padding
            for i, row in zip(indices, decode_bucket(model, src).tolist(), strict=True):
                decoded[i] = row
    hits = [strip(row) == tgt and EOS in row for row, (_, tgt) in zip(decoded, pairs, strict=True)]
    return sum(hits) / len(pairs), decoded


# --- the whole training run ---------------------------------------------------------------------------------


@dataclass
class Config:
    """The lesson's configuration: a small model, a large learning rate with a short warm-up, a fixed
    number of steps (it does not stop on a timer, so every machine trains for the same steps; the numbers still
    differ a little across CPUs, and the page's sentences branch on them)."""

    d_model: int = 64
    num_heads: int = 4
    num_layers: int = 2
    d_ff: int = 128
    dropout: float = 0.0
    batch_size: int = 64
    steps: int = 800
    lr: float = 2e-3
    warmup: int = 100
    label_smoothing: float = 0.1
    clip: float = 1.0
    eval_every: int = 100
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


def fit(config, device=None, batch_fn=bucket_batch, eval_pairs=None, stop=None, log=None):
    """Train a fresh model for config.steps steps (or only the first `stop` steps of that schedule), one bucket
    per step: a length drawn at random, config.batch_size fresh sources of that length. Returns (model, history).

    batch_fn(sources, device) -> Bucket builds each batch (the failure clinic passes broken ones). Every
    config.eval_every steps (and at the end) the model greedily decodes eval_pairs and the exact match is
    recorded; evaluation time is not counted in the training seconds."""
    model = new_model(config, device)
    eval_pairs = held_out_pairs(config) if eval_pairs is None else eval_pairs
    exclude = frozenset(tuple(src) for src, _ in eval_pairs)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr, betas=(0.9, 0.98), eps=1e-9)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_then_decay(config.warmup, config.steps))
    criterion = nn.CrossEntropyLoss(ignore_index=PAD, label_smoothing=config.label_smoothing)
    history, clock = History(), 0.0
    last = config.steps if stop is None else stop
    model.train()
    for step in range(1, last + 1):
        started = time.perf_counter()
        rng = random.Random(1_000_003 * config.seed + step)                 # this step's data, whatever ran before
        length = rng.randint(config.min_len, config.max_len)                # one length for the whole bucket
        bucket = batch_fn(bucket_sources(rng, length, config.batch_size, exclude), device)
        logits = model(bucket.src, bucket.tgt_in, None, bucket.tgt_mask)   # (B, L + 1, vocab); no padding: no src_mask
        loss = criterion(logits.flatten(0, 1), bucket.tgt_out.flatten())   # (B * (L + 1), vocab) against (B * (L + 1),)
        optimizer.zero_grad(set_to_none=True)                               # before backward, or gradients add up
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), config.clip)           # the global norm, at most config.clip
        optimizer.step()
        schedule.step()
        history.losses.append(loss.item())                                  # a number: a tensor keeps its graph alive
        clock += time.perf_counter() - started
        history.steps.append(step)
        if step % config.eval_every == 0 or step == last:
            accuracy, _ = exact_match(model, eval_pairs, device)            # in eval mode...
            model.train()                                                   # ...so back to train mode
            history.eval_steps.append(step)
            history.accuracies.append(accuracy)
            history.eval_seconds.append(clock)
            if log:
                log(f"step {step:5d}  loss {loss.item():.4f}  exact match {accuracy:.3f}  {clock:.1f} s")
    history.seconds = clock
    return model, history
