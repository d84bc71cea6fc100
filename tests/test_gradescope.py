"""Gradescope (autograder/integrations/gradescope/), tested against Gradescope's own contract, without Docker.

The contract, from Gradescope's "Autograder Specifications" (gradescope-autograders.readthedocs.io/en/latest/specs/,
the source of that page: docs/specs.md of github.com/gradescope/autograder_samples) and its "Best Practices" page:
- the zip has `setup.sh` and an executable `run_autograder` (with a `#!` line) at its root; Gradescope unpacks
  it into /autograder/source, runs setup.sh once as root, copies run_autograder to /autograder/run_autograder;
- per submission: the student's files in /autograder/submission, run_autograder run as root with /autograder
  as working directory, /autograder/submission_metadata.json beside them; the result is
  /autograder/results/results.json in the format the schema below transcribes;
- "Run your autograder as a non-root user ... remove access to the source and results directories".

The harness lays that directory contract out in a temporary root (AUTOGRADER_ROOT stands for /autograder),
runs setup.sh's checks (AUTOGRADER_SKIP_INSTALL: no apt-get or pip here) and run_autograder on the reference
solution, the blank notebook, catalogue submissions and broken uploads, validates every results.json against the
schema, and checks that the scores are `autograder grade`'s, in bubblewrap's sandbox and as a uid of its own (what
runs in Gradescope's container, where bubblewrap usually cannot), and that student code reaches none of the
grader's files either way.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import jsonschema
import nbformat
import pytest

import autograder
from autograder import config
from autograder.model.notebooks import read, secret_lines, solution_region_lines, source_notebook
from autograder.reporting.redact import redact
from conftest import NOTEBOOK, grade_quietly
from coursetools.layout import released_path
from coursetools.samples import implementations, make_submission, untouched_release
from helpers import POINTS, TOTAL, run_cli

pytestmark = [pytest.mark.grading, pytest.mark.slow]

# results.json as Gradescope's specification describes it ("Output format", "Controlling Test Case Visibility",
# "Controlling standard output visibility", "Test case status", "Output String Formatting", leaderboards), no key
# it does not name.
VISIBILITY = {"enum": ["hidden", "after_due_date", "after_published", "visible"]}
FORMAT = {"enum": ["text", "html", "simple_format", "md", "ansi"]}
TEST_CASE = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "score": {"type": "number"},
        "max_score": {"type": "number"},
        "status": {"enum": ["passed", "failed"]},
        "name": {"type": "string"},
        "name_format": FORMAT,
        "number": {"type": "string"},
        "output": {"type": "string"},
        "output_format": FORMAT,
        "tags": {"type": "array", "items": {"type": "string"}},
        "visibility": VISIBILITY,
        "extra_data": {"type": "object"},
    },
}
RESULTS_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "score": {"type": "number"},
        "execution_time": {"type": "number"},
        "output": {"type": "string"},
        "output_format": FORMAT,
        "test_output_format": FORMAT,
        "test_name_format": FORMAT,
        "visibility": VISIBILITY,
        "stdout_visibility": VISIBILITY,
        "extra_data": {"type": "object"},
        "tests": {"type": "array", "items": TEST_CASE},
        "leaderboard": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "value"],
                "properties": {
                    "name": {"type": "string"},
                    "value": {"type": ["number", "string"]},
                    "order": {"enum": ["asc", "desc"]},
                },
            },
        },
    },
    # "score": optional, but required if not on each test case
    "anyOf": [
        {"required": ["score"]},
        {"required": ["tests"], "properties": {"tests": {"items": {"required": ["score"]}}}},
    ],
}
# /autograder/submission_metadata.json as Gradescope documents it ("Submission Metadata")
METADATA = {
    "id": 123456,
    "created_at": "2026-11-30T14:22:32.365935-08:00",
    "assignment": {
        "due_date": "2026-12-01T23:59:00.000000-08:00",
        "group_size": None,
        "group_submission": False,
        "id": 25828,
        "course_id": 1234,
        "late_due_date": None,
        "release_date": "2026-11-20T00:00:00.000000-08:00",
        "title": NOTEBOOK,
        "total_points": "12.0",
    },
    "users": [{"email": "student@example.com", "id": 1234, "name": "Student User"}],
    "previous_submissions": [],
}


@pytest.fixture(scope="module")
def autograder_zip(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("gradescope") / "autograder.zip"
    made = run_cli("gradescope", NOTEBOOK, "--out", str(out))
    assert made.returncode == 0, made.stdout + made.stderr
    return out


def container(tmp: Path, archive: Path) -> Path:
    """Gradescope's /autograder, laid out in `tmp` as its harness does: source (the zip, unpacked),
    run_autograder copied beside it, submission, results, submission_metadata.json."""
    root = tmp / "autograder"
    (root / "source").mkdir(parents=True)
    with zipfile.ZipFile(archive) as zf:
        for info in zf.infolist():
            target = root / "source" / info.filename
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(zf.read(info))
            target.chmod((info.external_attr >> 16) & 0o777)
    shutil.copy2(root / "source" / "run_autograder", root / "run_autograder")
    (root / "submission").mkdir()
    (root / "results").mkdir()
    (root / "submission_metadata.json").write_text(json.dumps(METADATA))
    for path in [root, *root.rglob("*")]:  # the harness unpacks as root, readable by all (umask 022)
        path.chmod(path.stat().st_mode | stat.S_IROTH | (stat.S_IXOTH if path.is_dir() else 0))
    return root


def environment(root: Path, isolation: str | None = None) -> dict[str, str]:
    env = dict(os.environ, AUTOGRADER_ROOT=str(root), AUTOGRADER_PYTHON=sys.executable, AUTOGRADER_SKIP_INSTALL="1")
    env.pop("PYTHONPATH", None)  # run_autograder sets its own: the grader is the zip's copy
    if isolation:
        env["AUTOGRADER_ISOLATION"] = isolation
    return env


def grade_on_gradescope(root: Path, files: dict[str, bytes], isolation: str | None = None) -> tuple[dict | None, str]:
    """Put `files` in /autograder/submission, run /autograder/run_autograder; (results.json, its stdout)."""
    shutil.rmtree(root / "submission")
    (root / "submission").mkdir()
    for name, data in files.items():
        (root / "submission" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "submission" / name).write_bytes(data)
    (root / "results" / "results.json").unlink(missing_ok=True)
    done = subprocess.run(
        [str(root / "run_autograder")],
        cwd=root,
        env=environment(root, isolation),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((root / "results" / "results.json").read_text())
    jsonschema.validate(results, RESULTS_SCHEMA)
    return results, done.stdout


def nb_bytes(nb) -> bytes:
    return nbformat.writes(nb).encode()


def test_the_zip_holds_what_gradescope_asks_and_no_more(autograder_zip, tmp_path):
    with zipfile.ZipFile(autograder_zip) as zf:
        members = {info.filename: info for info in zf.infolist()}
        text = {name: zf.read(name).decode("utf-8") for name in members}
    # a notebook's cells as they read (its JSON escapes quotes), beside its raw text
    text[f"notebook/{NOTEBOOK}.ipynb"] += "\n".join(
        c.source for c in nbformat.reads(text[f"notebook/{NOTEBOOK}.ipynb"], 4).cells
    )
    for script in ("setup.sh", "run_autograder"):
        assert script in members, f"{script} must be at the root of the zip"
        assert (members[script].external_attr >> 16) & 0o111, f"{script} must be executable"
        assert text[script].startswith("#!/usr/bin/env bash\n")
    others = {n for n in members if not n.startswith("grader/autograder/")}
    assert others == {"setup.sh", "run_autograder", "requirements.txt", "gradescope.json", f"notebook/{NOTEBOOK}.ipynb"}
    assert all(n.endswith(".py") for n in members if n.startswith("grader/")), "the grader's code, nothing else"
    package = Path(autograder.__file__).parent
    for name in (n for n in members if n.startswith("grader/autograder/")):
        own_file = package / name.removeprefix("grader/autograder/")
        assert text[name] == own_file.read_text(encoding="utf-8"), f"{name} is not the package's own file"
    assert json.loads(text["gradescope.json"])["notebook"] == NOTEBOOK
    # that notebook's tests and nothing of its solutions, nor of any other notebook
    source = read(source_notebook(NOTEBOOK))
    solution_lines = {line.strip() for cell in source.cells for line in solution_region_lines(cell)}
    shown = {
        line.strip()
        for cell in read(released_path(source_notebook(NOTEBOOK))).cells
        for line in cell.source.splitlines()
    }
    leaked = [line for line in solution_lines - shown if len(line) >= 12 and any(line in t for t in text.values())]
    assert not leaked, f"solution lines in the zip: {leaked[:3]}"
    hidden = secret_lines(source)
    assert hidden and all(line in text[f"notebook/{NOTEBOOK}.ipynb"] for line in hidden), "the hidden tests are in it"
    own = {line.strip() for cell in source.cells for line in cell.source.splitlines()}
    for other in (p.stem for p in source_notebook(NOTEBOOK).parent.glob("*.ipynb") if p.stem != NOTEBOOK):
        assert not any(other in name for name in members)
        theirs = secret_lines(read(source_notebook(other))) - own  # a line both notebooks' tests have is this one's
        # an import line says nothing of a test (`import random` is in the grader's own code too)
        theirs = {line for line in theirs if not line.startswith(("import ", "from "))}
        # the grader's own code is the same in every zip: a probe's `results = []` found there is not a leak
        added = [t for name, t in text.items() if not name.startswith("grader/")]
        assert not any(line in t for line in theirs for t in added), other
    # built again: the same bytes (the zip can be committed or compared)
    again = tmp_path / "again.zip"
    assert run_cli("gradescope", NOTEBOOK, "--out", str(again)).returncode == 0
    assert again.read_bytes() == autograder_zip.read_bytes()


def test_setup_checks_and_locks_the_graders_files(autograder_zip, tmp_path):
    root = container(tmp_path, autograder_zip)
    done = subprocess.run(
        ["bash", str(root / "source" / "setup.sh")], env=environment(root), capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"grader: {root / 'source' / 'grader' / 'autograder'}" in done.stdout, "the zip's grader, not the checkout"
    assert f"notebook {NOTEBOOK}: {len(POINTS)} graded cells, {TOTAL:g} points" in done.stdout
    assert "a uid of its own imports torch" in done.stdout
    assert "bubblewrap works here" in done.stdout  # as root on this machine; on Gradescope, usually the other line
    for name in ("source", "results"):
        assert stat.S_IMODE((root / name).stat().st_mode) == 0o700 and (root / name).stat().st_uid == 0
    (root / "source" / "notebook" / f"{NOTEBOOK}.ipynb").unlink()
    broken = subprocess.run(
        ["bash", str(root / "source" / "setup.sh")], env=environment(root), capture_output=True, text=True, timeout=600
    )
    assert broken.returncode == 1 and "the notebook's tests are missing" in broken.stdout


def test_scores_are_autograder_grades_in_both_isolations(autograder_zip, tmp_path):
    wrong = {i.name: i for i in implementations(NOTEBOOK, "wrong")}
    cases = {
        "reference": make_submission(NOTEBOOK),
        "blank": untouched_release(NOTEBOOK),
        "mask_after_softmax": make_submission(NOTEBOOK, wrong["mask_after_softmax"].cells),
        "softmax_no_max": make_submission(NOTEBOOK, wrong["softmax_no_max"].cells),
        "correct": make_submission(NOTEBOOK, implementations(NOTEBOOK, "correct")[0].cells),
    }
    classroom = tmp_path / "class"
    for label, nb in cases.items():
        (classroom / label).mkdir(parents=True)
        (classroom / label / f"{NOTEBOOK}.ipynb").write_bytes(nb_bytes(nb))
    graded, _ = grade_quietly(classroom, workdir=tmp_path / "grading")
    hidden = secret_lines(read(source_notebook(NOTEBOOK)))
    root = container(tmp_path, autograder_zip)
    runs = [(label, None) for label in cases] + [("reference", "uid"), ("mask_after_softmax", "uid")]
    for label, isolation in runs:
        results, log = grade_on_gradescope(root, {f"{NOTEBOOK}.ipynb": nb_bytes(cases[label])}, isolation)
        expected = graded[label]
        assert results["score"] == expected.score, (label, isolation, log)
        assert results["extra_data"]["isolation"] == (isolation or "bwrap")
        assert [t["name"] for t in results["tests"]] == list(POINTS), "one test per graded cell, in order"
        for test, cell in zip(results["tests"], expected.cells, strict=True):
            assert (test["score"], test["max_score"]) == (cell.points, cell.max_points), (label, test["name"])
            assert test["status"] == ("passed" if cell.passed else "failed")
            assert test["output"] == (
                "passed" if cell.passed else redact(cell.message, hidden, config.MAX_MESSAGE_CHARS)
            )
            assert test["visibility"] == "visible"
        assert results["stdout_visibility"] == "hidden" and results["output_format"] == "text"
        text = json.dumps(results)
        assert not [line for line in hidden if line in text], "never a line of a hidden test"
    assert graded["reference"].score == TOTAL and graded["blank"].score == 0
    assert 0 < graded["mask_after_softmax"].score < TOTAL


def test_broken_misnamed_and_missing_uploads_get_zero_with_a_reason(autograder_zip, tmp_path):
    root = container(tmp_path, autograder_zip)
    results, _ = grade_on_gradescope(root, {f"{NOTEBOOK}.ipynb": b""})
    assert results["score"] == 0 and "the submitted file is empty" in results["output"]
    results, _ = grade_on_gradescope(root, {"homework.ipynb": nb_bytes(make_submission(NOTEBOOK))})
    assert results["score"] == 0 and "no file named" in results["output"] and "homework.ipynb" in results["output"]
    results, _ = grade_on_gradescope(root, {})
    assert results["score"] == 0 and f"no file named {NOTEBOOK}.ipynb was submitted" in results["output"]
    # a zip upload, unpacked by Gradescope into folders, with a browser's " (1)": graded, with a note
    results, _ = grade_on_gradescope(root, {f"work/{NOTEBOOK} (1).ipynb": nb_bytes(make_submission(NOTEBOOK))})
    assert results["score"] == TOTAL and f"submitted as '{NOTEBOOK} (1).ipynb'" in results["output"]


PROBE = """
import os
_found = [f"uid={{os.getuid()}}"]
for _label, _path in (("notebook", {notebook!r}), ("settings", {settings!r}), ("results", {results!r}),
                      ("metadata", {metadata!r})):
    try:
        with open(_path, "rb") as _handle:
            _handle.read(1)
        _found.append(f"{{_label}}=READ")
    except Exception as _error:
        _found.append(f"{{_label}}={{type(_error).__name__}}")
try:
    os.listdir({source!r})
    _found.append("source=LISTED")
except Exception as _error:
    _found.append(f"source={{type(_error).__name__}}")
try:
    with open({forged!r}, "w") as _handle:
        _handle.write('{{"score": 1000}}')
    _found.append("results=WROTE")
except Exception as _error:
    _found.append(f"write={{type(_error).__name__}}")
_PROBE = " ".join(_found)


def softmax(x, dim=-1):
    raise RuntimeError("probe: " + _PROBE)
"""


@pytest.mark.parametrize("isolation", ["bwrap", "uid"])
def test_student_code_reaches_none_of_the_graders_files(autograder_zip, tmp_path, isolation):
    """Gradescope's well-known leak: student code running next to the autograder's files reads the tests or writes
    results.json. In the sandbox those paths do not exist; as a uid of its own they are root's only."""
    root = container(tmp_path, autograder_zip)
    code = PROBE.format(
        notebook=str(root / "source" / "notebook" / f"{NOTEBOOK}.ipynb"),
        settings=str(root / "source" / "gradescope.json"),
        results=str(root / "results" / "results.json"),
        metadata=str(root / "submission_metadata.json"),
        source=str(root / "source"),
        forged=str(root / "results" / "forged.json"),
    )
    (root / "results" / "results.json").write_text("{}")  # an earlier run's, for the probe to try to read
    results, _ = grade_on_gradescope(
        root, {f"{NOTEBOOK}.ipynb": nb_bytes(make_submission(NOTEBOOK, {"softmax": code}))}, isolation
    )
    message = next(t["output"] for t in results["tests"] if t["name"] == "softmax_values")
    assert message.startswith("RuntimeError: probe: uid="), message
    assert "uid=0 " not in message, "student code never runs as root"
    for reached in ("READ", "LISTED", "WROTE"):
        assert reached not in message, message
    expected = "FileNotFoundError" if isolation == "bwrap" else "PermissionError"
    assert message.count(expected) == 6, message
    assert not (root / "results" / "forged.json").exists()
