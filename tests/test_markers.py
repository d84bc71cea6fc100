"""Solution and hidden-test markers are read one way everywhere: nbgrader's.

nbgrader's release strips a region at any line that *contains* its delimiter ("BEGIN HIDDEN TESTS", "END SOLUTION"
...), so "# BEGIN HIDDEN TESTS" (one #) hides lines from students as surely as "### BEGIN HIDDEN TESTS". The project
once read only its own exact lines: for such a near miss `secret_lines()` found nothing (the leak checks and the
redaction then treated the hidden lines as public) and `split_test` sent the hidden lines to the student's kernel.
Now `model.notebooks.marker` applies nbgrader's rule for every scanner, and `validate_sources` refuses a near miss.
"""

from __future__ import annotations

import nbformat
import pytest

from autograder.model.notebooks import (
    HIDDEN_BEGIN,
    SOLUTION_END,
    hidden_test_lines,
    marker,
    near_miss_markers,
    release_notebook,
    secret_lines,
    solution_region_lines,
    split_test,
)
from coursetools.publish import _check_tree
from coursetools.release import SourceError, validate_sources
from coursetools.site import PublishError

HIDDEN_LINE = "assert f(2) == 3, 'f adds one to two'"
NEAR_MISS_TEST = f"assert f(1) == 2, 'f adds one'\n# BEGIN HIDDEN TESTS\n{HIDDEN_LINE}\n# END HIDDEN TESTS"
ANSWER = "def f(x):\n    ### BEGIN SOLUTION\n    return x + 1\n    ### END SOLUTION"
JUDGED_NEAR_MISS = (
    "assert f(1) == 2, 'f adds one'\n## BEGIN HIDDEN TESTS\nx = 2\n### PROBE\nprobe = f(x)\n### JUDGE\n"
    "assert probe == 3, 'f adds one'\n#END HIDDEN TESTS"
)


def _cell(source: str, grade_id: str, **flags) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["nbgrader"] = {
        "grade": flags.get("grade", False),
        "solution": flags.get("solution", False),
        "locked": flags.get("locked", False),
        "grade_id": grade_id,
        "schema_version": 3,
        "task": False,
        **({"points": 1} if flags.get("grade") else {}),
    }
    return cell


def _notebook(test_source: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_notebook(
        cells=[
            _cell("import math", "mk_setup", locked=True),
            _cell(ANSWER, "mk_answer", solution=True),
            _cell(test_source, "mk_test", grade=True, locked=True),
        ]
    )


@pytest.mark.parametrize(
    "line, expected",
    [
        ("### BEGIN HIDDEN TESTS", HIDDEN_BEGIN),
        ("# BEGIN HIDDEN TESTS", HIDDEN_BEGIN),
        ("    #BEGIN HIDDEN TESTS please", HIDDEN_BEGIN),
        ("y = x  # END SOLUTION", SOLUTION_END),
        ("# begin hidden tests", None),  # nbgrader's match is case-sensitive
        ("assert x, 'the END of a SOLUTION'", None),
    ],
)
def test_marker_follows_nbgrader(line, expected):
    assert marker(line) == expected


def test_nbgrader_strips_a_near_miss_and_the_project_calls_its_lines_secret():
    nb = _notebook(NEAR_MISS_TEST)
    released = release_notebook(nb)
    assert HIDDEN_LINE not in released.cells[2].source, "nbgrader no longer strips a near-miss region?"
    assert hidden_test_lines(nb.cells[2]) == [HIDDEN_LINE]
    assert HIDDEN_LINE in secret_lines(nb)
    assert solution_region_lines(_cell("def g():\n    # BEGIN SOLUTION\n    return 42\n# END SOLUTION", "g")) == [
        "    return 42"
    ]


def test_split_test_keeps_a_near_miss_judge_out_of_the_kernel():
    parts = split_test(JUDGED_NEAR_MISS)
    assert "assert probe == 3" not in parts.kernel and "assert probe == 3" in parts.judge


def test_validate_sources_refuses_a_near_miss_and_names_the_line(tmp_path):
    path = tmp_path / "99_near_miss.ipynb"
    path.write_text(nbformat.writes(_notebook(NEAR_MISS_TEST)), encoding="utf-8")
    with pytest.raises(SourceError) as raised:
        validate_sources([path])
    assert "99_near_miss.ipynb cell 2" in str(raised.value) and "'# BEGIN HIDDEN TESTS'" in str(raised.value)
    assert near_miss_markers(NEAR_MISS_TEST) == ["# BEGIN HIDDEN TESTS", "# END HIDDEN TESTS"]
    exact = tmp_path / "exact" / "99_exact.ipynb"
    exact.parent.mkdir()
    exact.write_text(nbformat.writes(_notebook(NEAR_MISS_TEST.replace("# ", "### "))), encoding="utf-8")
    validate_sources([exact])


def test_publish_refuses_a_tree_with_a_near_miss_marker(tmp_path):
    (tmp_path / "lesson.md").write_text("x = 1\n# BEGIN SOLUTION\ny = 2\n", encoding="utf-8")
    with pytest.raises(PublishError, match="BEGIN SOLUTION"):
        _check_tree(tmp_path, frozenset())
