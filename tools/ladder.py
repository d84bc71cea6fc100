"""Chapter 13's ladder: chapter 12's model with each change since 2017, trained on the plays (`make ladder`).

    nice -n 10 .venv/bin/python tools/ladder.py [--log course/ladder_log.txt]

Every variant of `course.modern.LADDER` and `course.modern.EXTRAPOLATION` is trained with `course.textlm.fit` at
`course.modern.LADDER_RUN` (equal steps, the same batches for a seed), once per seed of `course.modern.SEEDS`, on
one CPU thread, each at the feed-forward width that matches the 2017 model's parameter count. After training it is
measured on the held-out plays: windows of the training context, and windows twice as long (the length test:
the positions beyond the training context are ones the model never saw).

It writes course/ladder_log.txt, JSON lines: the first says what ran (the configuration, the variants, the seeds,
torch, threads, the machine); then one line per run, written as soon as it ends (seeds in the outer loop, so an
interrupted run leaves whole seeds); the last gives the wall time. Chapter 13's page reads it, and
tests/test_lesson_13.py checks that it matches this configuration. About 25 minutes on a busy 2-core machine.
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

from course import modern, text, textlm

ROOT = Path(__file__).resolve().parent.parent
LOG = ROOT / "course" / "ladder_log.txt"


def variants() -> list[modern.Variant]:
    """The ladder's variants, then the length test's that the ladder does not have, each once."""
    found: list[modern.Variant] = []
    for variant in modern.LADDER + modern.EXTRAPOLATION:
        if variant not in found:
            found.append(variant)
    return found


def header() -> dict:
    """What the run is: the page and the test compare it with the code."""
    return {
        "config": asdict(modern.LADDER_RUN),
        "variants": [asdict(v) for v in variants()],
        "seeds": list(modern.SEEDS),
        "validation_windows": textlm.VALIDATION_WINDOWS,
        "long_context": 2 * modern.LADDER_RUN.context,
    }


def run(variant: modern.Variant, seed: int, corpus: text.Corpus, windows: torch.Tensor, long: torch.Tensor) -> dict:
    config = replace(modern.LADDER_RUN, seed=seed)
    model = modern.build(variant, config, corpus.vocab.size, seed)
    count = modern.parameters(model)
    cpu = time.process_time()
    log = textlm.fit(model, corpus.train_ids, windows[::4], config, every=config.steps)
    cpu = time.process_time() - cpu
    loss = textlm.position_losses(model, windows).mean().item()
    modern.extend_positions(model, long.shape[1] - 1, torch.Generator().manual_seed(seed))
    per_position = textlm.position_losses(model.eval(), long)  # (2 * context,)
    return {
        "variant": variant.name,
        "seed": seed,
        "parameters": count,
        "d_ff": modern.matched_d_ff(variant, config, corpus.vocab.size),
        "steps": log[-1].step,
        "train_seconds": log[-1].seconds,
        "cpu_seconds": round(cpu, 3),
        "train_loss": log[-1].train_loss,
        "validation_loss": loss,
        "long_position_losses": [round(x, 5) for x in per_position.tolist()],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log", type=Path, default=LOG)
    args = parser.parse_args()
    torch.set_num_threads(1)
    corpus = text.load_corpus()
    context = modern.LADDER_RUN.context
    windows = textlm.validation_windows(corpus.validation_ids, context, textlm.VALIDATION_WINDOWS)
    long = textlm.validation_windows(corpus.validation_ids, 2 * context, textlm.VALIDATION_WINDOWS)
    started = time.time()
    with args.log.open("w", encoding="utf-8") as log:
        first = header() | {
            "torch": torch.__version__,
            "threads": torch.get_num_threads(),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        }
        log.write(json.dumps(first) + "\n")
        for seed in modern.SEEDS:
            for variant in variants():
                row = run(variant, seed, corpus, windows, long)
                log.write(json.dumps(row) + "\n")
                log.flush()
                print(
                    f"seed {seed} {variant.name:28s} {row['parameters']:,} params  val {row['validation_loss']:.4f}"
                    f"  {row['train_seconds']:.0f} s ({row['cpu_seconds']:.0f} s CPU)",
                    flush=True,
                )
        log.write(json.dumps({"wall_seconds": round(time.time() - started)}) + "\n")


if __name__ == "__main__":
    main()
