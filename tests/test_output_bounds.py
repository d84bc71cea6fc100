"""What a notebook prints or displays is bounded, and a torch.save is not tampering (issue 30, "Size and output
bounds"), through the CLI with a control student graded in the same run.

- 60 display outputs of 1.9 MB each (three cells of 20) made a 108 MiB executed notebook and a 109 MiB feedback
  page: the grader keeps config.MAX_DISPLAY_OUTPUT_CHARS per output and MAX_NOTEBOOK_OUTPUT_CHARS per notebook,
  and the page says what was not kept.
- torch.save anywhere in a notebook added "put back before this test: torch.Tensor.__slotnames__" (pickling
  caches that attribute on the class): a note that cries wolf.
Run: .venv/bin/python -m pytest tests/test_output_bounds.py -q
"""

from __future__ import annotations

import html
import json
import subprocess
import sys
import textwrap

import nbformat
import pytest

from autograder import config
from autograder.grading.execute import NOT_KEPT_KEY
from autograder.store.gradebook import executed_path
from conftest import NOTEBOOK
from coursetools.samples import make_submission, write_submission
from helpers import TOTAL, run_cli

FLOOD = "from IPython.display import HTML, display\nfor _ in range(20):\n    display(HTML('A' * 1_900_000))\n"
SAVE = (
    "import io\nimport torch\ntorch.save(torch.zeros(2), io.BytesIO())\n"
    + "torch.save(torch.nn.Linear(2, 2), io.BytesIO())\n"
)


def _with_cells(*sources: str) -> nbformat.NotebookNode:
    """The reference submission with code cells of its own before everything else."""
    nb = make_submission(NOTEBOOK)
    nb.cells = [nbformat.v4.new_code_cell(source) for source in sources] + nb.cells
    return nb


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("bounds")
    subs, work, out = root / "submissions", root / "grading", root / "feedback"
    write_submission(make_submission(NOTEBOOK), subs / "control" / f"{NOTEBOOK}.ipynb")
    write_submission(_with_cells(FLOOD, FLOOD, FLOOD), subs / "flooder" / f"{NOTEBOOK}.ipynb")
    write_submission(_with_cells(SAVE), subs / "saver" / f"{NOTEBOOK}.ipynb")
    done = run_cli("grade", str(subs), "--workdir", str(work), "--workers", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    done = run_cli("feedback", str(subs), "--workdir", str(work), "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    results = {}
    for path in (work / config.RESULTS_DIR).glob(f"*/{NOTEBOOK}.json"):
        results[path.parent.name] = json.loads(path.read_text())
    return results, work, out


def test_every_student_is_graded_as_if_alone(graded):
    results, *_ = graded
    assert sorted(results) == ["control", "flooder", "saver"]
    for student in results:
        assert results[student]["score"] == TOTAL, (student, results[student].get("reason"))


def test_sixty_large_outputs_are_not_kept_and_the_page_says_so(graded):
    results, work, out = graded
    executed = executed_path(work, "flooder", NOTEBOOK)
    size = executed.stat().st_size
    assert size < config.MAX_NOTEBOOK_OUTPUT_CHARS + (2 << 20), f"executed notebook of {size:,} bytes"
    nb = nbformat.read(str(executed), as_version=4)
    notes = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if NOT_KEPT_KEY in o.get("metadata", {})]
    assert len(notes) == 60 and all(o.metadata[NOT_KEPT_KEY] >= 1_900_000 for o in notes)
    assert "characters was not kept: the grader keeps 1,000,000 characters per output" in notes[0].data["text/plain"]
    page = out / "flooder" / f"{NOTEBOOK}.html"
    assert page.stat().st_size < 8 << 20, f"feedback page of {page.stat().st_size:,} bytes"
    text = html.unescape(page.read_text(encoding="utf-8"))
    assert "60 output(s) of your notebook were too large to keep when it was graded" in text
    assert text.count("characters was not kept: the grader keeps 1,000,000 characters per output") == 60
    control = out / "control" / f"{NOTEBOOK}.html"
    assert "too large to keep" not in html.unescape(control.read_text(encoding="utf-8"))


def test_torch_save_is_not_tampering(graded):
    results, *_ = graded
    notes = results["saver"]["repairs"]
    assert not [n for n in notes if "put back" in n or "__slotnames__" in n], notes


def test_the_guard_snapshot_already_holds_what_pickling_caches():
    """In a fresh interpreter (an earlier torch.save in this process would hide the bug): pickling a tensor and a
    module after the guard's snapshot changes nothing it watches; a real change is still seen."""
    code = textwrap.dedent(
        """
        import io, json, torch
        from autograder.runner.guard import Guard
        guard = Guard(True)
        torch.save(torch.zeros(2), io.BytesIO())
        torch.save(torch.nn.Linear(2, 2), io.BytesIO())
        after_save = guard.changed()
        torch.Tensor.__slotnames__ = ["forged"]
        print(json.dumps([after_save, guard.changed()]))
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=config.REPO_ROOT)
    assert done.returncode == 0, done.stderr
    after_save, after_change = json.loads(done.stdout.strip().splitlines()[-1])
    assert after_save == [], after_save
    assert after_change == ["torch.Tensor.__slotnames__"]
