"""Release: student notebooks are generated from solutions/, in sync, and hide what they must."""

from __future__ import annotations

import shutil
import subprocess
import sys

import nbformat
import pytest

from autograder import config
from autograder.model.notebooks import (
    hidden_test_lines,
    is_test_cell,
    read,
    release_notebook,
    secret_lines,
    solution_paths,
)
from coursetools import layout
from coursetools.release import SourceError, release, validate_sources


def test_committed_student_notebooks_are_in_sync():
    proc = subprocess.run(
        [sys.executable, "-m", "autograder", "release", "--check"], capture_output=True, text=True, cwd=config.REPO_ROOT
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_check_reports_a_stale_notebook(tmp_path):
    solutions, released = tmp_path / "solutions", tmp_path / "chapters"
    shutil.copytree(config.SOLUTIONS_DIR, solutions)
    shutil.copytree(layout.RELEASE_DIR, released, ignore=shutil.ignore_patterns("*.md"))
    assert release(check=True, solutions_dir=solutions, release_dir=released) == []
    path = solutions / "02_dot_product_attention.ipynb"
    nb = read(path)
    next(c for c in nb.cells if is_test_cell(c)).source += "\nassert True, 'a new visible check'"
    nbformat.write(nb, str(path))
    stale = release(check=True, solutions_dir=solutions, release_dir=released)
    assert [s.path.name for s in stale] == ["02_dot_product_attention.ipynb"]
    release(solutions_dir=solutions, release_dir=released)  # writes it
    assert release(check=True, solutions_dir=solutions, release_dir=released) == []


@pytest.mark.parametrize("path", solution_paths(), ids=lambda p: p.stem)
def test_released_notebook_has_no_solutions_and_no_hidden_tests(path):
    source = read(path)
    student = read(layout.RELEASE_DIR / path.name)
    text = nbformat.writes(student)
    secrets = secret_lines(source)
    assert len(secrets) > 50
    for line in secrets:
        assert line not in text, f"hidden test line leaked into the release: {line}"
    assert "BEGIN SOLUTION" not in text and "BEGIN HIDDEN TESTS" not in text
    assert "x_max = x.max(dim=dim, keepdim=True).values" not in text  # chapter 02's solution
    stubs = sum(c.source.count("raise NotImplementedError()") for c in student.cells if c.cell_type == "code")
    # one stub per solution region (a class has one in each method that students write)
    assert stubs == sum(
        c.source.count("### BEGIN SOLUTION") for c in source.cells if c.metadata.get("nbgrader", {}).get("solution")
    )
    assert all(not c.get("outputs") for c in student.cells if c.cell_type == "code")


def test_every_test_cell_has_hidden_tests():
    for path in solution_paths():
        for cell in read(path).cells:
            if is_test_cell(cell):
                assert hidden_test_lines(cell), f"{path.name}: {cell.metadata.nbgrader.grade_id} has no hidden tests"


def _notebook_with_test(source: str, grade_id: str = "t1"):
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["nbgrader"] = {
        "grade": True,
        "solution": False,
        "locked": True,
        "grade_id": grade_id,
        "points": 1,
        "schema_version": 3,
    }
    return nbformat.v4.new_notebook(cells=[cell])


def test_source_conventions_are_enforced(tmp_path):
    nbformat.write(_notebook_with_test("assert 1 == 1"), str(tmp_path / "a.ipynb"))
    nbformat.write(_notebook_with_test("assert 2 == 2, 'fine'"), str(tmp_path / "b.ipynb"))
    with pytest.raises(SourceError) as excinfo:
        validate_sources([tmp_path / "a.ipynb", tmp_path / "b.ipynb"])
    message = str(excinfo.value)
    assert "assert without a message" in message and "a.ipynb" in message
    assert "grade_id 't1' already used" in message


def test_assert_close_needs_a_message(tmp_path):
    nbformat.write(
        _notebook_with_test("torch.testing.assert_close(a, b, atol=0, rtol=0)", "bare"), str(tmp_path / "a.ipynb")
    )
    nbformat.write(
        _notebook_with_test("torch.testing.assert_close(a, b, atol=0, rtol=0, msg='a equals b')", "with_msg"),
        str(tmp_path / "b.ipynb"),
    )
    with pytest.raises(SourceError) as excinfo:
        validate_sources([tmp_path / "a.ipynb", tmp_path / "b.ipynb"])
    head, *problems = str(excinfo.value).splitlines()
    assert problems == ["a.ipynb cell 0: test cell 'bare' line 1: assert_close without msg="], head


def test_release_is_deterministic():
    for path in solution_paths():
        assert nbformat.writes(release_notebook(read(path))) == nbformat.writes(release_notebook(read(path)))


def test_a_source_notebook_that_is_not_json_is_named(tmp_path):
    """A broken file in solutions/ is a problem with what the instructor gave (exit 2, its name), not a traceback."""
    (tmp_path / "99_broken.ipynb").write_text("{not json", encoding="utf-8")
    with pytest.raises(SourceError, match=r"99_broken.ipynb: not a readable notebook \(NotJSONError"):
        validate_sources([tmp_path / "99_broken.ipynb"])


def test_a_hidden_test_the_grader_cannot_split_is_refused_at_release(tmp_path):
    """A JUDGE before its PROBE would fail at grading time, for every student: release says so first."""
    body = "### BEGIN HIDDEN TESTS\nx = 1\n### JUDGE\nassert x == 1, 'x is one'\n### PROBE\n### END HIDDEN TESTS"
    nbformat.write(_notebook_with_test(body), str(tmp_path / "a.ipynb"))
    with pytest.raises(SourceError, match=r"a.ipynb cell 0: test cell 't1': '### JUDGE' out of order"):
        validate_sources([tmp_path / "a.ipynb"])
    ordered = body.replace("### JUDGE", "### SWAP").replace("### PROBE", "### JUDGE").replace("### SWAP", "### PROBE")
    nbformat.write(_notebook_with_test(ordered), str(tmp_path / "a.ipynb"))
    validate_sources([tmp_path / "a.ipynb"])
