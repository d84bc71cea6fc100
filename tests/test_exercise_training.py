"""Chapter 09's notebook trains a model in its ungraded "watch it learn" cell: on a CPU it runs torch on one thread
(two threads on a shared 2-core machine made 300 steps take 689 s instead of 31 s) and puts the caller's thread count
back afterwards. The released notebook, filled with the reference functions, runs a short version of that cell in a
fresh interpreter, which records the thread count at every training step."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from coursetools.samples import make_submission

NOTEBOOK = "09_train_and_decode"
WATCH_CALL = "history = watch_it_learn()"


def program(steps: int) -> str:
    """The notebook's code cells up to its training cell, with a short run recording the threads per step."""
    cells = []
    for cell in make_submission(NOTEBOOK).cells:
        if cell.cell_type != "code":
            continue
        if WATCH_CALL in cell.source:
            cells.append(cell.source.replace(WATCH_CALL, ""))
            break
        cells.append(cell.source)
    else:
        raise AssertionError(f"{NOTEBOOK} has no cell calling `{WATCH_CALL}`")
    return (
        "\n\n".join(cells)
        + f"""

import json
torch.set_num_threads(2)
threads_seen = []
_train_step = train_step


def train_step(*args, **kwargs):
    threads_seen.append(torch.get_num_threads())
    return _train_step(*args, **kwargs)


history = watch_it_learn(steps={steps}, eval_every={steps})
print("RESULT", json.dumps({{"threads_seen": sorted(set(threads_seen)), "after": torch.get_num_threads(),
                             "steps": len(history["losses"])}}))
"""
    )


def test_the_training_cell_uses_one_thread_on_a_cpu_and_puts_the_count_back(tmp_path):
    script = tmp_path / "watch.py"
    script.write_text(program(steps=10), encoding="utf-8")
    env = {**os.environ, "MPLBACKEND": "Agg", "CUDA_VISIBLE_DEVICES": ""}
    env.pop("AUTOGRADER", None)  # the cell returns at once under the grader
    run = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-4000:]
    line = next(line for line in run.stdout.splitlines() if line.startswith("RESULT "))
    result = json.loads(line.removeprefix("RESULT "))
    assert result["steps"] == 10
    assert result["threads_seen"] == [1], f"training ran with {result['threads_seen']} threads"
    assert result["after"] == 2, "the cell should put back the thread count it found (2 here)"
