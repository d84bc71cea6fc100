"""make bench: train chapter 09's Transformer from scratch on digit reversal, with the lesson's configuration.

Prints the training seconds to the first evaluation reaching >= 99% exact match on the held-out sequences
(greedy decoding; evaluations not counted), the final exact match, the wall time of the whole run, the device
and torch's number of threads. The lesson (chapters/09_training.md) trains the same model the same way.

Usage: .venv/bin/python tools/bench_train.py [--steps N] [--threads N] [--cpu]

Like the lesson, it runs torch on one thread by default: for a model this small a second thread gains little
(measured here with the lesson's buckets: 16-21 ms per step with two threads, 20-21 ms with one, on a 2-core
machine), two threads stall badly when another process holds a core (5-15 times slower per step, measured on a
shared machine), and the thread count changes the rounding, hence the numbers of the run.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the course package of this checkout

import torch  # noqa: E402

from course.seq2seq import Config, fit  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=Config.steps, help=f"training steps (default {Config.steps})")
    parser.add_argument("--cpu", action="store_true", help="train on the CPU even when a GPU is present")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1, as the lesson)")
    parser.add_argument("--eval-every", type=int, default=25, help="evaluate every N steps (default 25)")
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    device = "cuda" if torch.cuda.is_available() and not args.cpu else "cpu"
    config = Config(steps=args.steps, eval_every=args.eval_every)
    print(
        f"torch {torch.__version__} on {device}; {torch.get_num_threads()} threads; "
        f"{os.cpu_count()} CPUs; {platform.processor() or platform.machine()}; load average "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    print(f"config: {config}")
    started = time.perf_counter()
    _, history = fit(config, device=device, log=print)
    wall = time.perf_counter() - started
    reached = next((s for s, a in zip(history.eval_seconds, history.accuracies, strict=True) if a >= 0.99), None)
    step = next((s for s, a in zip(history.eval_steps, history.accuracies, strict=True) if a >= 0.99), None)
    print()
    if reached is None:
        print(f"99% exact match: not reached in {config.steps} steps")
    else:
        print(f"99% exact match: {reached:.1f} s of training (step {step})")
    print(
        f"final exact match: {history.accuracies[-1]:.2%} on {config.held_out} held-out sequences "
        f"after {config.steps} steps, {history.seconds:.1f} s of training ({wall:.1f} s with evaluations)"
    )
    print(f"device: {device}, torch threads: {torch.get_num_threads()}")
    return 0 if reached is not None else 1


if __name__ == "__main__":
    sys.exit(main())
