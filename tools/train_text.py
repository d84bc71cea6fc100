"""Chapter 12's longer run: the character-level model trained on the plays for half an hour (`make train-text`).

    nice -n 10 .venv/bin/python tools/train_text.py [--minutes 25] [--every 100]

The page cannot train for long (it is executed in about a minute at every build), so this script trains
`course.textlm.LONG_RUN` for a fixed time on one CPU thread and writes what the page reads:

- course/shakespeare_lm_log.txt: JSON lines. The first says what ran (configuration, torch, threads, the
  machine); then one line per measurement (a `LogRow`: steps, training seconds, characters read, training
  loss, validation loss on `VALIDATION_WINDOWS` windows of the held-out plays, nats per character); the last
  gives the validation loss of the checkpoint as saved (its weights rounded to bfloat16).
- course/shakespeare_lm.txt: that checkpoint (`textlm.Checkpoint`, text, about 1.2 MB).

tests/test_lesson_12.py loads the checkpoint and checks that its validation loss is the logged one.
Training time depends on the machine: the log records it, and the page reads it from the log.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from dataclasses import asdict, replace
from pathlib import Path

import torch

from course import text, textlm

ROOT = Path(__file__).resolve().parent.parent
CHECKPOINT = ROOT / "course" / "shakespeare_lm.txt"
LOG = ROOT / "course" / "shakespeare_lm_log.txt"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=textlm.LONG_RUN_SECONDS / 60, help="training time")
    parser.add_argument("--every", type=int, default=100, help="steps between validation measurements")
    parser.add_argument("--checkpoint", type=Path, default=CHECKPOINT)
    parser.add_argument("--log", type=Path, default=LOG)
    args = parser.parse_args()

    torch.set_num_threads(1)
    corpus = text.load_corpus()
    config = textlm.LONG_RUN
    windows = textlm.validation_windows(corpus.validation_ids, config.context, textlm.VALIDATION_WINDOWS)
    model = textlm.new_model(config, corpus.vocab.size)
    started = time.time()
    with args.log.open("w", encoding="utf-8") as log:
        header = {
            "config": asdict(config),
            "training_seconds": args.minutes * 60,
            "parameters": sum(p.numel() for p in model.parameters()),
            "torch": torch.__version__,
            "threads": torch.get_num_threads(),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        }
        log.write(json.dumps(header) + "\n")

        def on_row(row: textlm.LogRow) -> None:
            fields = {k: None if v != v else v for k, v in asdict(row).items()}  # NaN (no step yet) -> null
            log.write(json.dumps(fields) + "\n")
            log.flush()
            print(
                f"step {row.step:6d}  {row.seconds:7.0f} s  train {row.train_loss:.4f}  val {row.validation_loss:.4f}"
            )

        rows = textlm.fit(
            model, corpus.train_ids, windows, config, every=args.every, on_row=on_row, seconds=args.minutes * 60
        )
        checkpoint = textlm.Checkpoint.of(model, replace(config, steps=rows[-1].step), corpus.vocab.chars)
        checkpoint.save(args.checkpoint)
        saved = textlm.Checkpoint.load(args.checkpoint).model()
        loss = textlm.position_losses(saved, windows).mean().item()
        log.write(json.dumps({"checkpoint_validation_loss": loss, "wall_seconds": round(time.time() - started)}) + "\n")
    print(f"checkpoint {args.checkpoint}: validation loss {loss:.4f} nats/char")


if __name__ == "__main__":
    main()
