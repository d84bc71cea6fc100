"""The adversarial catalogue of exercise 02, graded in ONE `autograder grade` run.

Cases live in tests/implementations/02_dot_product_attention/adversarial.py, each with its
expected grade. Besides every case's own expectation, the run as a whole must show:
the reference student scores full marks in the same run; no feedback page holds a hidden
test line; nothing outside the sandboxes changed (a marker file, planted paths, a TCP
listener on 127.0.0.1 that must see no connection); no process is left behind.
"""

from __future__ import annotations

import html
import importlib.util
import socket
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import nbformat
import pytest

from autograder import config
from autograder.grading.grade import Options, grade
from autograder.model.notebooks import JUDGE_MARK, PROBE_MARK, secret_lines
from autograder.reporting.export import export_csv
from autograder.reporting.feedback import write_feedback
from autograder.sandbox import Limits
from autograder.store.gradebook import executed_path
from coursetools.layout import IMPLEMENTATIONS_DIR
from helpers import sandbox_processes

pytestmark = [pytest.mark.grading, pytest.mark.slow]

_spec = importlib.util.spec_from_file_location(
    "adversarial_02", IMPLEMENTATIONS_DIR / "02_dot_product_attention" / "adversarial.py"
)
adversarial = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = adversarial  # dataclasses look their module up there
_spec.loader.exec_module(adversarial)
CASES = {case.name: case for case in adversarial.CASES}
NOTEBOOK = adversarial.NOTEBOOK
LIMITS = Limits(cell_timeout_s=10)


class Listener:
    """A TCP server on 127.0.0.1 that counts the connections it accepts."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.running = True
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while self.running:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            conn.close()

    def close(self):
        self.running = False
        self.thread.join(timeout=5)
        self.sock.close()


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("adversarial")
    subs, work = root / "submissions", root / "grading"
    marker = root / "marker.txt"
    marker.write_text("untouched")
    listener = Listener()
    ctx = adversarial.Context(
        solutions_dir=config.SOLUTIONS_DIR,
        workdir=work,
        submissions_dir=subs,
        marker=marker,
        listener_port=listener.port,
        host_tmp_target=Path(tempfile.gettempdir()) / f"planted-{uuid.uuid4().hex}",
    )
    for case in CASES.values():
        adversarial.write_case(case, ctx, subs)
    started = time.monotonic()
    try:
        results = {r.student: r for r in grade(subs, Options(workdir=work, limits=LIMITS, workers=2), out=_Quiet())}
    finally:
        listener.close()
    seconds = time.monotonic() - started
    print(f"\nadversarial catalogue: {len(results)} submissions graded in one run in {seconds:.1f} s")
    print(f"{'case':<26} {'expected':>8} {'got':>6} {'seconds':>8}  reason")
    for name, case in CASES.items():
        r = results[name]
        print(f"{name:<26} {case.score:>8g} {r.score:>6g} {r.seconds:>8.1f}  {r.reason[:70]}")
    return results, ctx, subs, work, root, listener


class _Quiet:
    def write(self, text):
        return len(text)

    def flush(self):
        pass


def outputs_text(work: Path, student: str) -> str:
    path = executed_path(work, student, NOTEBOOK)
    if not path.exists():
        return ""
    nb = nbformat.read(str(path), as_version=4)
    parts = []
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            parts += [str(output.get("text", "")), str(output.get("ename", "")), str(output.get("evalue", ""))]
    return "\n".join(parts)


def test_catalogue_is_big_enough():
    assert len(CASES) >= 30
    assert {c.kind for c in CASES.values()} == {"structure", "isolation", "tamper"}


@pytest.mark.parametrize("name", list(CASES))
def test_case_gets_its_expected_grade(run, name):
    results, _, _, work, _, _ = run
    case, result = CASES[name], results[name]
    detail = (
        f"{case.description}: {result.score:g}/{result.max_score:g}, reason {result.reason!r}, "
        f"failed {[(c.grade_id, c.message[:80]) for c in result.cells if not c.passed]}, repairs {result.repairs}"
    )
    assert not result.internal_error, detail
    assert result.max_score == adversarial.FULL, detail
    assert result.score == case.score, detail
    if case.reason:
        assert case.reason in result.reason, detail
    else:
        assert result.reason == "", detail
    for fragment in case.repairs:
        assert any(fragment in r for r in result.repairs), f"no repair mentions {fragment!r}; {detail}"
    text = outputs_text(work, name)
    for fragment in case.outputs:
        assert fragment in text, f"{fragment!r} not in the executed notebook's outputs; {detail}"
    assert "LEAKED" not in text, f"an attack succeeded: {detail}"
    assert result.seconds <= case.max_seconds, detail


def test_the_reference_student_scores_full_in_the_same_run(run):
    results = run[0]
    assert results["reference"].score == adversarial.FULL and not results["reference"].repairs


def test_nothing_outside_the_sandboxes_changed(run):
    _, ctx, subs, work, root, listener = run
    assert listener.connections == 0, "a submission reached a server on 127.0.0.1"
    assert ctx.marker.read_text() == "untouched"
    assert not ctx.host_tmp_target.exists()
    for planted in (subs / "reference" / "planted.txt", work / "planted.txt", config.SOLUTIONS_DIR / "planted.txt"):
        assert not planted.exists(), planted


def test_no_process_is_left_behind(run):
    deadline = time.monotonic() + 10
    while sandbox_processes() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert sandbox_processes() == []


def test_feedback_never_shows_a_hidden_test_line(run):
    _, _, subs, work, root, _ = run
    written = write_feedback(subs, root / "feedback", work)
    assert len(written) == len(CASES)
    hidden = secret_lines(adversarial.source())
    for page in written:
        text = html.unescape(page.read_text(encoding="utf-8"))
        leaked = [line for line in hidden if line in text]
        assert not leaked, f"{page.parent.name}: {leaked[:2]}"


def test_export_has_a_repairs_column(run):
    _, _, _, work, root, _ = run
    import csv

    export_csv(root / "grades.csv", work)
    with (root / "grades.csv").open(newline="") as handle:
        rows = {row["student"]: row for row in csv.DictReader(handle)}
    assert "was missing" in rows["answers-deleted"]["repairs"]
    assert rows["reference"]["repairs"] == ""


def one_piece_solutions(folder: Path) -> Path:
    """solutions/ with every hidden test in one piece: the PROBE and JUDGE marker lines removed, so the
    judge's comparisons run in the student's kernel right after the probe, as nbgrader runs a test."""
    folder.mkdir(parents=True)
    for path in config.SOLUTIONS_DIR.glob("*.ipynb"):
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            lines = cell.source.splitlines()
            cell.source = "\n".join(line for line in lines if line.strip() not in (PROBE_MARK, JUDGE_MARK))
        nbformat.write(nb, folder / path.name)
    return folder


def grade_tamper_cases(tmp_path: Path, solutions_dir: Path, harden: bool) -> dict:
    names = [n for n, c in CASES.items() if c.kind == "tamper"]
    subs = tmp_path / "submissions"
    ctx = adversarial.Context(solutions_dir, tmp_path / "w", subs, tmp_path / "m", 9, tmp_path / "t")
    for name in names:
        adversarial.write_case(CASES[name], ctx, subs)
    options = Options(workdir=tmp_path / "w", limits=LIMITS, harden=harden, solutions_dir=solutions_dir)
    return {r.student: r for r in grade(subs, options, out=_Quiet())}


def test_each_tamper_case_is_a_real_attack(tmp_path):
    """Against the same tests in one piece (compared in the student's process) with the runner's guard off,
    each trick marked `gains_unguarded` earns points its wrong answer does not deserve."""
    results = grade_tamper_cases(tmp_path, one_piece_solutions(tmp_path / "solutions"), harden=False)
    for name, case in CASES.items():
        if case.gains_unguarded:
            assert results[name].score > adversarial.NO_ATTENTION, (
                f"{name} gains nothing in one piece without the guard: {results[name].score}"
            )


def test_the_judge_fails_every_tamper_case_even_without_the_guard(tmp_path):
    """With the guard off, the verdicts the judge computes outside the student's process still give every
    trick at most what its wrong answer earns alone: student code can only make its own results wrong."""
    results = grade_tamper_cases(tmp_path, config.SOLUTIONS_DIR, harden=False)
    table = {name: r.score for name, r in results.items()}
    print("\ntamper case, guard off: points", table)
    gained = {name: score for name, score in table.items() if score > adversarial.NO_ATTENTION}
    assert not gained, f"tricks that gain points with the guard off: {gained}"
