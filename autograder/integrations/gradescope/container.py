"""What runs in Gradescope's container: setup.sh's checks, and run_autograder's grading of one submission.

Each submission is graded by the same grader as `autograder grade` (`grading.execute`: alignment, limits, the
runner's guard, per-cell results; hidden tests sent over the pipe one cell at a time). Student code runs:
- in bubblewrap's sandbox when it can start in the container (it needs user namespaces, which Docker's default
  profile refuses: on Gradescope expect the other case);
- else as a uid of its own (`config.SANDBOX_UID_BASE` + slot, no capability, no_new_privs) under the same
  rlimits and time limits, while /autograder/source (the grader and the notebook's tests) and
  /autograder/results are root's only (0700) and submission_metadata.json root's (0600).
docs/grading.md's "Using it with ... Gradescope" says what holds in each case.

results.json: `score` (the total), `output` (why the notebook could not run to the end, what the grader
repaired: plain text), `tests` (per graded cell: name = its grade_id, score, max_score, status, output = "passed"
or the failed property's message, never a line of a hidden test), the visibility chosen when the zip was built
(`visible` by default: every message is written for students and is on their feedback page anyway), and
`stdout_visibility` `hidden` (the grader's log is for the instructor). A failure of the grader itself writes no
results.json (the project's rule: a grader error is never a grade) and exits 1; Gradescope then reports that the
autograder failed, and "Regrade" runs it again.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from nbformat import NotebookNode

import autograder
from autograder import config
from autograder.grading.execute import execute_submission
from autograder.intake.collect import collect
from autograder.integrations.gradescope.settings import SETTINGS, Settings
from autograder.model.notebooks import max_points, read, secret_lines
from autograder.model.records import Job, Result
from autograder.reporting.feedback import student_message
from autograder.reporting.redact import redact
from autograder.sandbox import SandboxUnavailable, check_available, shutdown_servers
from autograder.store.gradebook import atomic_write

ROOT = Path("/autograder")  # Gradescope's; AUTOGRADER_ROOT or --root elsewhere (the course's tests)
ISOLATION_ENV = "AUTOGRADER_ISOLATION"  # "bwrap" or "uid" forces one (tests, diagnosis); default: bwrap if it starts


def _settings(root: Path) -> Settings:
    return Settings.from_json(json.loads((root / "source" / SETTINGS).read_text(encoding="utf-8")))


def lock_down(root: Path) -> list[str]:
    """The grader's files and the results readable and writable by root only; returns what was done."""
    done = []
    for name in ("source", "results"):
        path = root / name
        path.mkdir(parents=True, exist_ok=True)
        os.chown(path, 0, 0)
        path.chmod(0o700)
        done.append(f"{path}: 0700, root's")
    metadata = root / "submission_metadata.json"
    if metadata.exists():
        metadata.chmod(0o600)
        done.append(f"{metadata}: 0600")
    return done


def isolation() -> str:
    """How student code runs here: "bwrap" (the sandbox) when bubblewrap starts, else "uid" (a uid of its own)."""
    forced = os.environ.get(ISOLATION_ENV, "")
    if forced == "uid":
        return "uid"
    try:
        check_available()
    except SandboxUnavailable:
        if forced == "bwrap":
            raise
        return "uid"
    return "bwrap"


def results_json(result: Result, source: NotebookNode, settings: Settings, seconds: float, mode: str) -> dict:
    """Gradescope's results.json of one graded submission."""
    hidden = secret_lines(source)
    visibility = settings.visibility
    tests = []
    for number, cell in enumerate(result.cells, 1):
        message = "passed" if cell.passed else redact(cell.message or "failed", hidden, config.MAX_MESSAGE_CHARS)
        tests.append(
            {
                "name": cell.grade_id,
                "number": str(number),
                "score": cell.points,
                "max_score": cell.max_points,
                "status": "passed" if cell.passed else "failed",
                "output": message,
                "visibility": visibility,
            }
        )
    return {
        "score": result.score,
        "execution_time": round(seconds),
        "output": "\n".join(
            [
                f"{result.score:g} / {result.max_score:g} points: "
                + ("every test passed." if result.score >= result.max_score else "each failed test says what failed.")
            ]
            + student_message(result, hidden, tests=False)
        ),
        "output_format": "text",
        "test_output_format": "text",
        "test_name_format": "text",
        "visibility": visibility,
        "stdout_visibility": "hidden",
        "extra_data": {
            "notebook": result.notebook,
            "grader_version": result.grader_version,
            "isolation": mode,
            "reason": result.reason,
        },
        "tests": tests,
    }


def _gather(submission: Path, into: Path) -> None:
    """Every file the student uploaded (in folders too, as Gradescope unpacks a zip), side by side in `into`;
    of two files of one name, the later one."""
    files = [
        p
        for p in submission.rglob("*")
        if p.is_file()
        and not p.is_symlink()
        and not any(part.startswith(".") or part == "__MACOSX" for part in p.relative_to(submission).parts)
    ]
    for path in sorted(files, key=lambda p: p.stat().st_mtime):
        target = into / path.name
        shutil.copyfile(path, target)
        os.utime(target, (path.stat().st_mtime, path.stat().st_mtime))


def _grade(root: Path, settings: Settings, mode: str, out) -> Result:
    """The submission graded from a private copy (root's only: the student's copy, never the original), once
    more if the grader itself failed; what was repaired in the upload's name comes first among the repairs."""
    private = Path(tempfile.mkdtemp(prefix="gradescope-"))
    try:
        (private / "student").mkdir()
        submission = root / "submission"
        if submission.is_dir():
            _gather(submission, private / "student")
        sub = collect(private, [settings.notebook])[0]
        source_path = root / "source" / "notebook" / f"{settings.notebook}.ipynb"
        job = Job(sub, source_path, settings.limits, sandboxed=mode == "bwrap", unprivileged=mode == "uid")
        result = execute_submission(job)
        if result.internal_error:
            print(f"the grader failed ({result.internal_error}); trying once more", file=out)
            result = execute_submission(job)
    finally:
        shutdown_servers()
        shutil.rmtree(private, ignore_errors=True)
    if sub.note:
        result.repairs.insert(0, f"file: {sub.note}")
    return result


def _log(notebook: str, result: Result, out) -> None:
    """The instructor's summary (Gradescope shows run_autograder's output to instructors only)."""
    why = f" ({result.reason})" if result.reason else ""
    print(f"{notebook}: {result.score:g}/{result.max_score:g}{why}", file=out)
    for cell in result.cells:
        print(f"  {cell.grade_id:<32} {cell.points:g}/{cell.max_points:g}  {cell.message[:200]}", file=out)


def run(root: Path = ROOT, out=sys.stdout) -> int:
    """Grade the submission in `root`/submission and write `root`/results/results.json; 0, or 1 when the grader
    itself failed (no results.json then)."""
    started = time.monotonic()
    root = Path(root)
    settings = _settings(root)
    for line in lock_down(root):
        print(line, file=out)
    try:
        mode = isolation()
    except SandboxUnavailable as exc:
        print(f"error: {exc}", file=out)
        return 1
    print(f"student code runs {'in the bubblewrap sandbox' if mode == 'bwrap' else 'as a uid of its own'}", file=out)
    result = _grade(root, settings, mode, out)
    if result.internal_error:
        print(f"error: the grader failed, not the submission: {result.internal_error}. No results.json.", file=out)
        return 1
    source = read(root / "source" / "notebook" / f"{settings.notebook}.ipynb")
    results = results_json(result, source, settings, time.monotonic() - started, mode)
    atomic_write(root / "results" / "results.json", json.dumps(results, indent=1) + "\n")
    _log(settings.notebook, result, out)
    return 0


def _check_files(root: Path, out) -> list[str]:
    """What must hold before anything runs: root, the notebook's tests, util-linux's tools."""
    problems = []
    if os.geteuid() != 0:
        problems.append("run_autograder must run as root (Gradescope runs it as root)")
    try:
        settings = _settings(root)
        source = read(root / "source" / "notebook" / f"{settings.notebook}.ipynb")
        points = max_points(source)
        print(
            f"notebook {settings.notebook}: {len(points)} graded cells, {sum(points.values()):g} points, "
            f"visibility {settings.visibility}",
            file=out,
        )
    except (OSError, KeyError, ValueError) as exc:
        problems.append(f"the notebook's tests are missing or unreadable: {exc}")
    for tool in ("prlimit", "setpriv"):
        if shutil.which(tool) is None:
            problems.append(f"`{tool}` (util-linux) is missing")
    return problems


def _check_student_side(out) -> list[str]:
    """What student code will find: a uid of its own imports the notebook's packages, and bubblewrap starts or
    not (which says how student code is isolated here)."""
    problems = []
    probe = [
        "setpriv",
        f"--reuid={config.SANDBOX_UID_BASE}",
        f"--regid={config.SANDBOX_UID_BASE}",
        "--clear-groups",
        "--",
        sys.executable,
        "-c",
        "import torch, numpy, matplotlib, IPython; print(torch.__version__)",
    ]
    done = subprocess.run(probe, capture_output=True, text=True, cwd="/", timeout=300)
    if done.returncode != 0:
        problems.append(f"a uid of its own cannot import the notebook's packages: {done.stderr.strip()[-500:]}")
    else:
        print(f"a uid of its own imports torch {done.stdout.strip()}, numpy, matplotlib, IPython", file=out)
    try:
        mode = isolation()
    except SandboxUnavailable as exc:
        problems.append(str(exc))
    else:
        print(
            "bubblewrap works here: student code runs in its sandbox"
            if mode == "bwrap"
            else "bubblewrap cannot run here: student code runs as a uid of its own, without the grader's files",
            file=out,
        )
    return problems


def check(root: Path = ROOT, out=sys.stdout) -> int:
    """setup.sh's checks: 0 when the grader can grade here (and says how it will isolate student code)."""
    root = Path(root)
    print(f"grader: {Path(autograder.__file__).parent}", file=out)
    problems = _check_files(root, out)
    if not problems:
        for line in lock_down(root):
            print(line, file=out)
        problems = _check_student_side(out)
    for problem in problems:
        print(f"error: {problem}", file=out)
    return 1 if problems else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder.integrations.gradescope")
    parser.add_argument("step", choices=["run", "check"], help="run: grade the submission; check: setup.sh's checks")
    parser.add_argument("--root", type=Path, default=Path(os.environ.get("AUTOGRADER_ROOT", str(ROOT))))
    args = parser.parse_args(argv)
    return run(args.root) if args.step == "run" else check(args.root)
