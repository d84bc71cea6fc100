"""Chapter 12's longer run: the character-level model trained on the plays (`make train-text`), in stretches.

    nice -n 10 .venv/bin/python tools/train_text.py                         # continue the run, or start one
    nice -n 10 .venv/bin/python tools/train_text.py --minutes 60            # one more hour of it
    nice -n 10 .venv/bin/python tools/train_text.py --fresh --total-minutes 600   # a new run, planned for 10 hours

The page cannot train for long (it is executed in about a minute at every build), so this script trains
`course.textlm.LONG_RUN` on one CPU thread for a planned total of training time (the learning rate's cosine
follows it), which may be spent in several stretches, on different days or machines. It writes what the page
reads:

- course/shakespeare_lm_log.txt: JSON lines. The first says what was planned and what first ran
  (configuration, planned training seconds, torch, threads, the machine); each stretch then starts with a line
  `{"stretch": k, ...}` (what ran it, when) and adds one line per measurement (a `LogRow`: steps, training
  seconds, characters read, training loss, validation loss on `VALIDATION_WINDOWS` windows of the held-out
  plays, nats per character), and ends with the validation loss of the checkpoint it saved (its weights
  rounded to bfloat16) and the stretch's wall time.
- course/shakespeare_lm.txt: that checkpoint (`textlm.Checkpoint`, text, about 1.2 MB).
- course/shakespeare_lm_state.pt: the training state (`textlm.TrainingState`: full-precision weights, AdamW's
  moments, the position in the batches), saved at every measurement, which the next stretch continues from.
  A stretch killed midway continues from its last measurement; the log's rows after it are dropped.

tests/test_lesson_12.py loads the checkpoint and checks that its validation loss is the logged one;
tests/test_train_text.py checks that a run in stretches is the run without them. Training time depends on the
machine: the log records it, and the page reads it from the log.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import torch

from course import text, textlm

ROOT = Path(__file__).resolve().parent.parent
CHECKPOINT = ROOT / "course" / "shakespeare_lm.txt"
LOG = ROOT / "course" / "shakespeare_lm_log.txt"
STATE = ROOT / "course" / "shakespeare_lm_state.pt"


def machine() -> dict[str, Any]:
    """What runs this stretch, for its log line."""
    return {
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def log_lines_up_to(log: Path, step: int) -> list[str]:
    """The log's lines, without the measurements a killed stretch wrote after its last saved state."""
    kept = []
    for line in log.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if "step" in record and record["step"] > step:
            continue
        kept.append(line)
    return kept


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, help="training time of this stretch (default: what the plan has left)")
    parser.add_argument(
        "--total-minutes",
        type=float,
        default=textlm.LONG_RUN_SECONDS / 60,
        help="with --fresh: the run's planned training time, which the learning rate's schedule follows",
    )
    parser.add_argument("--fresh", action="store_true", help="start a new run, replacing the log, checkpoint and state")
    parser.add_argument("--every", type=int, default=100, help="steps between validation measurements")
    parser.add_argument("--checkpoint", type=Path, default=CHECKPOINT)
    parser.add_argument("--log", type=Path, default=LOG)
    parser.add_argument("--state", type=Path, default=STATE)
    args = parser.parse_args(argv)

    torch.set_num_threads(1)
    config = textlm.LONG_RUN
    resume = None
    if args.fresh:
        header = {"config": asdict(config), "training_seconds": args.total_minutes * 60} | machine()
        lines = []  # the header is written once the model's parameters are counted
    elif args.state.exists():
        resume = textlm.TrainingState.load(args.state)
        lines = log_lines_up_to(args.log, resume.step)
        header = json.loads(lines[0])
        if header["config"] != asdict(config):
            print(
                f"{args.state}: its run trained {header['config']}, not textlm.LONG_RUN {asdict(config)}",
                file=sys.stderr,
            )
            return 2
    else:
        what = f"{args.log} holds a run with no training state ({args.state}) to continue from"
        print(f"{what}: --fresh starts a new one and replaces it", file=sys.stderr)
        return 2
    budget = header["training_seconds"]
    spent = resume.spent if resume is not None else 0.0
    if spent >= budget:
        print(f"the run has spent its planned {budget / 60:.0f} minutes; --fresh --total-minutes N plans a new one")
        return 0
    stop_after = spent + args.minutes * 60 if args.minutes is not None else None
    stretch = sum(1 for line in lines if "stretch" in json.loads(line)) + 1

    corpus = text.load_corpus()
    windows = textlm.validation_windows(corpus.validation_ids, config.context, textlm.VALIDATION_WINDOWS)
    model = textlm.new_model(config, corpus.vocab.size)
    if args.fresh:
        header["parameters"] = sum(p.numel() for p in model.parameters())
        lines = [json.dumps(header)]
    lines.append(json.dumps({"stretch": stretch} | machine()))
    started = time.time()
    args.log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with args.log.open("a", encoding="utf-8") as log:

        def on_row(row: textlm.LogRow) -> None:
            fields = {k: None if v != v else v for k, v in asdict(row).items()}  # NaN (no step yet) -> null
            log.write(json.dumps(fields) + "\n")
            log.flush()
            print(
                f"step {row.step:6d}  {row.seconds:7.0f} s  train {row.train_loss:.4f}  val {row.validation_loss:.4f}"
            )

        rows = textlm.fit(
            model,
            corpus.train_ids,
            windows,
            config,
            every=args.every,
            on_row=on_row,
            seconds=budget,
            resume=resume,
            stop_after=stop_after,
            on_state=lambda state: state.save(args.state),
        )
        checkpoint = textlm.Checkpoint.of(model, replace(config, steps=rows[-1].step), corpus.vocab.chars)
        checkpoint.save(args.checkpoint)
        saved = textlm.Checkpoint.load(args.checkpoint).model()
        loss = textlm.position_losses(saved, windows).mean().item()
        end = {"checkpoint_validation_loss": loss, "wall_seconds": round(time.time() - started)}
        log.write(json.dumps(end) + "\n")
    left = budget - rows[-1].seconds
    print(f"checkpoint {args.checkpoint}: validation loss {loss:.4f} nats/char")
    print(f"{max(left, 0) / 60:.0f} of the plan's {budget / 60:.0f} minutes left: make train-text continues")
    return 0


if __name__ == "__main__":
    sys.exit(main())
