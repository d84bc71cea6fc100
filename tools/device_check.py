"""Prove the exercises grade the same on a GPU: run every catalogued implementation there.

The GPU machine has torch but not nbgrader or Jupyter, so this works in two steps:

    python tools/device_check.py build grading/device        # here: assemble the cases
    python3 tools/device_check.py run grading/device/cases.json   # there: stdlib + torch only

`build` turns each submission (reference solution, every wrong and correct
implementation) into the list of code cells the grader would execute, hidden tests
included. `run` executes each case in a fresh interpreter, cell by cell as a kernel
would (a failing cell does not stop the next), and prints which graded cells failed
and whether that matches the catalogue's expectation.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

RUNNER = r"""
import json, sys, traceback
cells = json.load(sys.stdin)
ns = {"__name__": "__main__"}
failed, device = [], None
for cell in cells:
    try:
        exec(compile(cell["source"], cell["grade_id"] or "<cell>", "exec"), ns)
    except BaseException as exc:
        if cell["graded"]:
            failed.append(cell["grade_id"])
    device = ns.get("device", device)
print(json.dumps({"failed": failed, "device": str(device)}))
"""


def build(out_dir: Path) -> Path:
    from autograder.grading.align import align
    from autograder.model.notebooks import grade_id, is_test_cell, read, release_notebook, source_notebook
    from coursetools.samples import catalogue_submissions, catalogued_notebooks

    cases = []
    for name in catalogued_notebooks():
        source = read(source_notebook(name))
        released = release_notebook(source)
        for label, nb, expect in catalogue_submissions(name):
            assembled = align(nb, released, source).notebook
            cells = [
                {"source": c.source, "grade_id": grade_id(c), "graded": is_test_cell(c)}
                for c in assembled.cells
                if c.cell_type == "code"
            ]
            cases.append({"notebook": name, "label": label, "expect_fail": sorted(expect), "cells": cells})
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "cases.json"
    path.write_text(json.dumps(cases))
    print(f"wrote {len(cases)} cases to {path}")
    return path


def run(cases_path: Path) -> int:
    import torch  # noqa: F401  (fail early if this machine has no torch)

    cases = json.loads(Path(cases_path).read_text())
    mismatches = 0
    for case in cases:
        proc = subprocess.run(
            [sys.executable, "-c", RUNNER], input=json.dumps(case["cells"]), capture_output=True, text=True, timeout=600
        )
        try:
            outcome = json.loads(proc.stdout.strip().splitlines()[-1])
        except (IndexError, ValueError):
            print(f"{case['label']}: runner failed: {proc.stderr[-2000:]}")
            mismatches += 1
            continue
        ok = sorted(outcome["failed"]) == case["expect_fail"]
        mismatches += not ok
        print(
            f"{'ok  ' if ok else 'FAIL'} {case['notebook']} {case['label']:<36} on {outcome['device']}: failed "
            f"{outcome['failed']}" + ("" if ok else f" expected {case['expect_fail']}")
        )
    print(f"{len(cases) - mismatches} passed, {mismatches} failed")
    return 1 if mismatches else 0


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("build", "run"):
        sys.exit(__doc__)
    if sys.argv[1] == "build":
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
        build(Path(sys.argv[2]))
    else:
        sys.exit(run(Path(sys.argv[2])))
