"""Chapter 12's character-level language model on the plays, and the count-based baselines it is measured against.

    from course import text, textlm

    corpus = text.load_corpus()
    config = textlm.LMConfig()                                    # the build's model and its training
    model = textlm.new_model(config, corpus.vocab.size)           # chapter 10's DecoderOnlyLM
    windows = textlm.validation_windows(corpus.validation_ids, config.context, count=256)
    log = textlm.fit(model, corpus.train_ids, windows, config)   # list[LogRow]: steps, seconds, losses
    textlm.position_losses(model, windows)                        # (context,) mean loss at each position
    textlm.ngram_position_losses(corpus.train_ids, windows, order=5, vocab_size=corpus.vocab.size)
    textlm.continue_text(model, corpus.vocab, "ROMEO:\\n", 200, temperature=0.8, top_k=10)

Every loss here is in nats per character: the mean of -ln p(next character) over the predicted characters.

One validation measurement for every model. The validation text is cut into `count` windows of
`context + 1` characters, evenly spaced (no randomness: every model, every run and every build sees the
same characters). In a window, the model predicts character t + 1 from characters 0..t, for t = 0 ..
context - 1, and nothing before the window. The n-gram baselines are scored on exactly the same
predictions with exactly the same information (their history is cut at the window's start too), so a
difference between two models is a difference of the models, and the loss at position t says what t + 1
characters of context are worth to each.

Training reads the training text in epochs: each epoch starts at a random offset, cuts the text from
there into consecutive chunks of `context + 1` characters and visits them in a random order, batch by
batch (`ShuffledChunks`); each chunk gives the inputs (its first `context` characters) and the targets
(its last `context`, one further on).
"""

from __future__ import annotations

import base64
import copy
import json
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from course.provided import DecoderOnlyLM
from course.text import Vocabulary


@dataclass(frozen=True)
class LMConfig:
    """A model's size and how it is trained (one place for both: the build and tools/train_text.py use it)."""

    d_model: int = 128
    num_heads: int = 4
    num_layers: int = 2
    d_ff: int = 512
    context: int = 128  # characters the model reads (its max_len)
    dropout: float = 0.0
    batch_size: int = 32
    steps: int = 400
    lr: float = 3e-3
    warmup: int = 40  # steps of linear warm-up, then a cosine decay to lr / 10
    weight_decay: float = 0.01
    seed: int = 0


# The build's model (chapter 12 trains it while the page is built: 200 steps, about a minute of one quiet CPU
# thread, several minutes on a busy machine; the page prints the time it took) and
# the longer run of tools/train_text.py (`make train-text`: half an hour), the same model read for longer.
BUILD_RUN = LMConfig(batch_size=16, steps=200, warmup=25, lr=6e-3)  # a short run: small batches, a large step
LONG_RUN = LMConfig(batch_size=32, warmup=100, steps=1_000_000)  # the same model; its schedule: LONG_RUN_SECONDS
LONG_RUN_SECONDS = 25 * 60  # its training time; with its measurements, under 30 minutes
VALIDATION_WINDOWS = 256  # windows of every validation measurement (256 x 128 = 32,768 predictions)


@dataclass(frozen=True)
class LogRow:
    """One measurement during training: after `step` steps and `seconds` of training (measurement excluded),
    having read `chars` training characters; the mean training loss of the steps since the last row, and the
    validation loss (nats per character)."""

    step: int
    seconds: float
    chars: int
    train_loss: float
    validation_loss: float


@dataclass
class Checkpoint:
    """What tools/train_text.py saves: the configuration, the vocabulary's characters and the weights.

    Saved as text (`save`, `load`): a first line of JSON (configuration, characters, each tensor's name and
    shape), then one line per tensor, its values in bfloat16 as base64. Text, so that it travels like the
    course's other data files (published with course/, fetched beside it by a lesson notebook on Colab);
    bfloat16, so that a model of half a million weights stays near 1.2 MB. The script measures the loss of the
    rounded weights, the ones saved."""

    config: LMConfig
    chars: str
    state: dict[str, torch.Tensor]

    def save(self, path: str | Path) -> None:
        header = {
            "config": asdict(self.config),
            "chars": self.chars,
            "tensors": [[name, list(t.shape)] for name, t in self.state.items()],
        }
        lines = [json.dumps(header)]
        for tensor in self.state.values():
            raw = tensor.detach().to(torch.bfloat16).contiguous().view(torch.int16).numpy().tobytes()
            lines.append(base64.b64encode(raw).decode("ascii"))
        Path(path).write_text("\n".join(lines) + "\n", encoding="ascii")

    @classmethod
    def load(cls, path: str | Path) -> Checkpoint:
        first, *rest = Path(path).read_text(encoding="ascii").splitlines()
        header = json.loads(first)
        state = {}
        for (name, shape), line in zip(header["tensors"], rest, strict=True):
            values = np.frombuffer(base64.b64decode(line), dtype=np.int16).copy()
            state[name] = torch.from_numpy(values).view(torch.bfloat16).float().reshape(shape)
        return cls(LMConfig(**header["config"]), header["chars"], state)

    @classmethod
    def of(cls, model: torch.nn.Module, config: LMConfig, chars: str) -> Checkpoint:
        return cls(config, chars, {k: v.detach().clone() for k, v in model.state_dict().items()})

    def model(self) -> DecoderOnlyLM:
        """The model with these weights, in eval mode."""
        model = new_model(self.config, len(self.chars))
        model.load_state_dict(self.state)
        return model.eval()


def new_model(config: LMConfig, vocab_size: int) -> DecoderOnlyLM:
    """Chapter 10's decoder-only model at the configuration's size, its weights drawn from the configuration's seed."""
    torch.manual_seed(config.seed)
    return DecoderOnlyLM(
        vocab_size,
        d_model=config.d_model,
        num_heads=config.num_heads,
        num_layers=config.num_layers,
        d_ff=config.d_ff,
        dropout=config.dropout,
        max_len=config.context,
    )


@dataclass(frozen=True)
class BatchPosition:
    """Where a stream of training batches stands: the generator's state when the current epoch was drawn, and
    the index of the next batch in that epoch. Enough to draw, after a stop, exactly the batches that would
    have come next."""

    epoch_generator_state: torch.Tensor  # torch.Generator.get_state() before the epoch's offset and order
    next_batch: int


class ShuffledChunks(Iterator[tuple[torch.Tensor, torch.Tensor]]):
    """Endless batches (inputs, targets), each (batch_size, context): epochs of consecutive chunks, shuffled.

    Each epoch draws an offset in 0 .. context - 1 and an order of the chunks from `generator`; `position()`
    says where the stream stands, and `ShuffledChunks(..., position=...)` continues from there."""

    def __init__(
        self,
        ids: torch.Tensor,
        context: int,
        batch_size: int,
        generator: torch.Generator,
        position: BatchPosition | None = None,
    ) -> None:
        if (len(ids) - context) // (context + 1) < batch_size:
            raise ValueError(f"{len(ids)} characters make fewer than batch_size={batch_size} chunks of {context + 1}")
        self.ids, self.context, self.batch_size, self.generator = ids, context, batch_size, generator
        if position is not None:
            generator.set_state(position.epoch_generator_state)
        self._new_epoch()
        if position is not None:
            self.next_batch = position.next_batch

    def _new_epoch(self) -> None:
        self.epoch_state = self.generator.get_state()
        offset = int(torch.randint(self.context, (), generator=self.generator))
        count = (len(self.ids) - offset) // (self.context + 1)
        self.chunks = self.ids[offset : offset + count * (self.context + 1)].view(count, self.context + 1)
        self.order = torch.randperm(count, generator=self.generator)  # (count,)
        self.next_batch = 0

    def position(self) -> BatchPosition:
        return BatchPosition(self.epoch_state.clone(), self.next_batch)

    def __next__(self) -> tuple[torch.Tensor, torch.Tensor]:
        first = self.next_batch * self.batch_size
        if first + self.batch_size > len(self.order):  # the epoch's last, incomplete batch is skipped
            self._new_epoch()
            first = 0
        batch = self.chunks[self.order[first : first + self.batch_size]]  # (batch, context + 1)
        self.next_batch += 1
        return batch[:, :-1], batch[:, 1:]


def validation_windows(ids: torch.Tensor, context: int, count: int) -> torch.Tensor:
    """(count, context + 1): `count` windows evenly spaced over `ids`, the first at 0, the last at the end."""
    starts = torch.linspace(0, len(ids) - context - 1, count).long()  # (count,)
    return torch.stack([ids[s : s + context + 1] for s in starts.tolist()])


def position_losses(model: torch.nn.Module, windows: torch.Tensor, batch_size: int = 64) -> torch.Tensor:
    """(context,): the mean over the windows of -ln p(character t + 1 | characters 0..t), at every t.

    The caller chooses the model's mode (eval() for a measurement: no dropout)."""
    total = torch.zeros(windows.shape[1] - 1)
    with torch.no_grad():
        for first in range(0, len(windows), batch_size):
            part = windows[first : first + batch_size]  # (batch, context + 1)
            logits = model(part[:, :-1])  # (batch, context, vocab)
            losses = F.cross_entropy(logits.transpose(1, 2), part[:, 1:], reduction="none")  # (batch, context)
            total += losses.sum(dim=0)
    return total / len(windows)


def _learning_rate(config: LMConfig, step: int, progress: float) -> float:
    """Linear warm-up over config.warmup steps, then a cosine from lr down to lr / 10 as progress goes 0 -> 1."""
    if step < config.warmup:
        return config.lr * (step + 1) / config.warmup
    return config.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))


@dataclass
class TrainingState:
    """Everything a run needs to continue where it stopped, with the batches and the learning rates it would
    have had: the step, the training seconds spent (all stretches together), the weights and AdamW's moments
    in full precision, and the position in the stream of batches. `fit` gives it at the end of every call
    (`on_state`) and continues from one (`resume`). Saved with torch.save; `load` reads it back with
    `weights_only=True`, which unpickles tensors and plain containers only."""

    step: int
    spent: float
    model: dict[str, torch.Tensor]
    optimiser: dict[str, Any]
    batches: BatchPosition

    def save(self, path: str | Path) -> None:
        """Written to a temporary file and renamed, so a run killed while saving leaves the previous state."""
        path = Path(path)
        partial = path.with_name(path.name + ".partial")
        position = {"epoch_generator_state": self.batches.epoch_generator_state, "next_batch": self.batches.next_batch}
        torch.save(
            {
                "step": self.step,
                "spent": self.spent,
                "model": self.model,
                "optimiser": self.optimiser,
                "batches": position,
            },
            partial,
        )
        partial.replace(path)

    @classmethod
    def load(cls, path: str | Path) -> TrainingState:
        raw = torch.load(path, weights_only=True)
        return cls(raw["step"], raw["spent"], raw["model"], raw["optimiser"], BatchPosition(**raw["batches"]))


def fit(
    model: torch.nn.Module,
    train_ids: torch.Tensor,
    windows: torch.Tensor,
    config: LMConfig,
    every: int = 50,
    on_row: Callable[[LogRow], None] | None = None,
    seconds: float | None = None,
    resume: TrainingState | None = None,
    stop_after: float | None = None,
    stop_at_step: int | None = None,
    on_state: Callable[[TrainingState], None] | None = None,
) -> list[LogRow]:
    """Train `model` with AdamW (warm-up, cosine decay) for config.steps steps or, given `seconds`, for that
    many seconds of training (the schedule then follows the time spent: a budget in time fits any machine),
    measuring the validation loss on `windows` before the first step, every `every` steps and after the
    last. Returns the measurements; `on_row` is called with each as it is made. Training seconds exclude
    the measurements.

    A long run can be trained in stretches: `stop_after` (training seconds, all stretches together) or
    `stop_at_step` ends this call before the schedule does, `on_state` receives the TrainingState at every
    measurement (the last one included), and a later call with `resume=` that state (and the same model, data
    and configuration) continues as if it had not stopped. Only the first stretch measures step 0."""
    generator = torch.Generator().manual_seed(config.seed)
    position = resume.batches if resume is not None else None
    batches = ShuffledChunks(train_ids, config.context, config.batch_size, generator, position)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    optimiser = torch.optim.AdamW(
        [{"params": decay, "weight_decay": config.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=config.lr,
        betas=(0.9, 0.99),
    )
    step, spent = 0, 0.0
    if resume is not None:
        model.load_state_dict(resume.model)
        optimiser.load_state_dict(resume.optimiser)
        step, spent = resume.step, resume.spent
    log: list[LogRow] = []
    running, counted = 0.0, 0

    def state() -> TrainingState:
        weights = {k: v.detach().clone() for k, v in model.state_dict().items()}
        return TrainingState(step, spent, weights, copy.deepcopy(optimiser.state_dict()), batches.position())

    def measure() -> None:
        model.eval()
        validation = position_losses(model, windows).mean().item()
        model.train()
        train = running / counted if counted else float("nan")
        row = LogRow(step, round(spent, 3), step * config.batch_size * config.context, train, validation)
        if on_state is not None:  # the state first: a log row never runs ahead of a saved state
            on_state(state())
        log.append(row)
        if on_row is not None:
            on_row(row)

    if resume is None:
        measure()
    model.train()
    while True:
        progress = spent / seconds if seconds is not None else step / config.steps
        if progress >= 1.0 or (stop_after is not None and spent >= stop_after) or step == stop_at_step:
            break
        started = time.perf_counter()
        for group in optimiser.param_groups:
            group["lr"] = _learning_rate(config, step, progress)
        inputs, targets = next(batches)  # (batch, context) each
        logits = model(inputs)  # (batch, context, vocab)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimiser.step()
        spent += time.perf_counter() - started
        running, counted = running + loss.item(), counted + 1
        step += 1
        if step % every == 0:
            measure()
            running, counted = 0.0, 0
    if not log or log[-1].step != step:
        measure()
    model.eval()
    return log


# --- sampling --------------------------------------------------------------------------------------------


def continue_text(
    model: torch.nn.Module,
    vocab: Vocabulary,
    prompt: str,
    length: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    generator: torch.Generator | None = None,
) -> str:
    """`prompt` followed by `length` characters drawn one at a time from the model (in eval mode), reading at
    most its last max_len characters. The scores are divided by `temperature`; with `top_k`, only the k most
    probable characters can be drawn (chapter 10's top-k; ties with the k-th kept too). Top-p is exercise 12's to
    write: this published module holds no nucleus sampler while that exercise is open."""
    model.eval()
    ids = vocab.encode(prompt).tolist()
    context = getattr(model, "max_len", len(ids) + length)
    with torch.no_grad():
        for _ in range(length):
            logits = model(torch.tensor([ids[-context:]]))[0, -1]  # (vocab,): scores for the next character
            probs = torch.softmax(logits / temperature, dim=-1)  # (vocab,)
            if top_k is not None and top_k < len(probs):
                kth = probs.sort(descending=True).values[top_k - 1]  # the k-th largest probability
                probs = probs * (probs >= kth)  # the rest can never be drawn
            choice = torch.multinomial(probs / probs.sum(), 1, generator=generator)
            ids.append(int(choice))
    return vocab.decode(ids)


# --- count-based baselines -------------------------------------------------------------------------------

DISCOUNT = 0.75  # the customary fixed D of absolute discounting and Kneser-Ney; not tuned here
# How counts are smoothed (ngram_position_losses): absolute discounting (Ney, Essen and Kneser 1994, with the fixed
# D above), interpolated Kneser-Ney (Kneser and Ney 1995, the same D) and modified Kneser-Ney (Chen and Goodman
# 1998: three discounts per order, estimated from the counts of counts).
SMOOTHERS = ("absolute", "kneser-ney", "modified-kneser-ney")


def _keys(ids: np.ndarray, n: int, bits: int) -> np.ndarray:
    """The n-grams of `ids` ending at positions n-1 .. len-1, each packed into one integer (`bits` per id)."""
    key = np.zeros(len(ids) - n + 1, dtype=np.int64)
    for j in range(n):
        key = (key << bits) | ids[j : len(ids) - n + 1 + j]
    return key


def _lookup(keys: np.ndarray, values: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """A table: the value of each queried key among the sorted, distinct `keys` (0 for a key not there)."""

    def value(queries: np.ndarray) -> np.ndarray:
        where = np.searchsorted(keys, queries).clip(max=max(len(keys) - 1, 0))
        return np.where(keys[where] == queries, values[where], 0) if len(keys) else np.zeros_like(queries)

    return value


@dataclass(frozen=True)
class _Counts:
    """One order's counts, as a smoother reads them: c(h w) for every n-gram h w, and for every history h the
    total c(h) = sum over w of c(h w) and how many w have c(h w) = 1, = 2 and >= 3 (N1, N2, N3+)."""

    gram: Callable[[np.ndarray], np.ndarray]
    total: Callable[[np.ndarray], np.ndarray]
    once: Callable[[np.ndarray], np.ndarray]
    twice: Callable[[np.ndarray], np.ndarray]
    more: Callable[[np.ndarray], np.ndarray]
    discounts: tuple[float, float, float]  # D1, D2, D3+ (modified Kneser-Ney's; unused by the others)


def _counts(grams: np.ndarray, counts: np.ndarray, bits: int) -> _Counts:
    """The tables of one order from its distinct n-grams (sorted keys) and their counts."""
    histories, which = np.unique(grams >> bits, return_inverse=True)

    def per_history(values: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        return _lookup(histories, np.bincount(which, weights=values, minlength=len(histories)).astype(np.int64))

    of_count = [int(np.sum(counts == k)) for k in range(1, 5)]  # n1 .. n4: how many n-grams occur k times
    return _Counts(
        _lookup(grams, counts),
        per_history(counts),
        per_history(counts == 1),
        per_history(counts == 2),
        per_history(counts >= 3),
        _discounts(*of_count),
    )


def _discounts(n1: int, n2: int, n3: int, n4: int) -> tuple[float, float, float]:
    """Modified Kneser-Ney's three discounts from the counts of counts (Chen and Goodman 1998, eq. 26):
    Y = n1 / (n1 + 2 n2), D1 = 1 - 2Y n2/n1, D2 = 2 - 3Y n3/n2, D3+ = 3 - 4Y n4/n3, each kept within [0, k]
    (a tiny text can leave a count of counts at 0: that discount is then the fixed DISCOUNT)."""
    if n1 == 0 or n1 + 2 * n2 == 0:
        return (DISCOUNT, DISCOUNT, DISCOUNT)
    y = n1 / (n1 + 2 * n2)
    found = []
    for k, (below, above) in enumerate([(n1, n2), (n2, n3), (n3, n4)], start=1):
        d = k - (k + 1) * y * above / below if below else DISCOUNT
        found.append(min(max(d, 0.0), float(k)))
    return (found[0], found[1], found[2])


def _order_counts(train: np.ndarray, n: int, bits: int, continuation: bool) -> _Counts:
    """Order n's counts in the training text: how often each n-gram occurs, or (Kneser-Ney's continuation
    counts) after how many different characters it occurs, N1+(. h w)."""
    if continuation:
        distinct = np.unique(_keys(train, n + 1, bits))  # every (n+1)-gram x h w once
        grams, counts = np.unique(distinct & ((1 << (n * bits)) - 1), return_counts=True)  # h w, and how many x
    else:
        grams, counts = np.unique(_keys(train, n, bits), return_counts=True)
    return _counts(grams, counts.astype(np.int64), bits)


def _smoothed(
    counts: _Counts, gram: np.ndarray, history: np.ndarray, lower: np.ndarray, modified: bool
) -> tuple[np.ndarray, np.ndarray]:
    """(p(w | h) interpolated with the shorter history's prediction `lower`, whether h was seen at all) for the
    n-grams `gram` = h w with histories `history` = h:
        p(w | h) = (c(h w) - D(c(h w))) / c(h) + gamma(h) * lower,
        gamma(h) = (D1 N1(h) + D2 N2(h) + D3+ N3+(h)) / c(h),
    with D(0) = 0, and D(c) = DISCOUNT for every c >= 1 unless `modified`. What the discounts take off is exactly
    what gamma hands to the shorter history, so p sums to one over w."""
    d1, d2, d3 = counts.discounts if modified else (DISCOUNT, DISCOUNT, DISCOUNT)
    c_hw, c_h = counts.gram(gram), counts.total(history)
    discount = np.select([c_hw == 0, c_hw == 1, c_hw == 2], [0.0, d1, d2], default=d3)
    gamma = d1 * counts.once(history) + d2 * counts.twice(history) + d3 * counts.more(history)
    safe = np.maximum(c_h, 1)
    return (c_hw - discount) / safe + gamma / safe * lower, c_h > 0


def ngram_position_losses(
    train_ids: torch.Tensor, windows: torch.Tensor, order: int, vocab_size: int, smoothing: str = "absolute"
) -> torch.Tensor:
    """(context,): an n-gram model's mean loss at each position of the windows (same predictions as
    `position_losses`). Order 1 is the unigram model, order 2 the bigram, and so on.

    Interpolated smoothing, from the uniform 1 / vocab_size up: with h the previous order - 1 characters (fewer
    near a window's start) and h' = h without its first character,
        p(w | h) = (c(h w) - D) / c(h) + D * N(h) / c(h) * p(w | h'),
    c counting in the training text and N(h) the number of different characters seen after h; a history never
    seen in training hands over to the shorter one (`_smoothed` has the general form). "absolute" counts
    occurrences at every order. Kneser-Ney ("kneser-ney", "modified-kneser-ney") counts occurrences only at the
    highest order a prediction uses (order, or fewer where the window's start cuts the history); every shorter
    history counts continuations instead, N1+(. h w), the number of different characters that h w follows: a
    shorter history is consulted when the longer one has little to say, so what it should know is how many
    contexts w appears in, not how often (Chen and Goodman 1998). "modified-kneser-ney" takes three discounts per
    order (for counts 1, 2 and 3 or more) from the counts of counts."""
    if smoothing not in SMOOTHERS:
        raise ValueError(f"smoothing must be one of {', '.join(SMOOTHERS)}, not {smoothing!r}")
    bits = max(1, (vocab_size - 1).bit_length())
    if order * bits > 62:
        raise ValueError(f"order {order} does not fit in 64-bit keys with {bits} bits per character")
    train = train_ids.numpy().astype(np.int64)
    win = windows.numpy().astype(np.int64)  # (count, context + 1)
    width = win.shape[1]
    targets = win[:, 1:]  # (count, context): character t + 1
    prob = np.full(targets.shape, 1.0 / vocab_size)
    position = np.arange(width - 1)
    highest = np.minimum(order, position + 2)  # the highest order each position's history allows
    kneser_ney, modified = smoothing != "absolute", smoothing == "modified-kneser-ney"
    for n in range(1, order + 1):
        # the n-gram that ends at target t + 1: characters t - n + 2 .. t + 1 of the window
        usable = position >= n - 2  # a history of n - 1 characters fits in the window
        query = np.zeros(targets.shape, dtype=np.int64)
        for j in range(n):
            column = (position - n + 2 + j).clip(min=0)  # index into the window (clipped: not usable)
            query = (query << bits) | win[:, column]
        history = query >> bits
        raw, seen = _smoothed(_order_counts(train, n, bits, False), query, history, prob, modified)
        if kneser_ney and n < order:
            continued, continued_seen = _smoothed(_order_counts(train, n, bits, True), query, history, prob, modified)
            top = highest == n  # (context,): the highest order here counts occurrences, the shorter continuations
            raw, seen = np.where(top, raw, continued), np.where(top, seen, continued_seen)
        prob = np.where(usable & seen, raw, prob)
    return torch.tensor(-np.log(prob).mean(axis=0), dtype=torch.float32)
