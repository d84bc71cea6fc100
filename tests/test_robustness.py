"""Submissions that misbehave: each is graded with a reason, none stops the run,
none can weaken the tests, none can read hidden tests through its feedback."""

from __future__ import annotations

import html
import io
import json

import nbformat
import pytest

from autograder.grading.grade import Options, grade
from autograder.model.notebooks import grade_id, is_test_cell, max_points, read, secret_lines, source_notebook
from autograder.reporting.feedback import write_feedback
from autograder.sandbox import Limits
from conftest import NOTEBOOK
from coursetools.samples import implementations, make_submission, write_submission

pytestmark = pytest.mark.grading

POINTS = max_points(read(source_notebook(NOTEBOOK)))
SOFTMAX_CELLS = {"softmax_values", "softmax_dim", "softmax_stable"}
# the cells that need no attention code: the softmax tests, and the conceptual question after the attention cells
NO_ATTENTION_CELLS = SOFTMAX_CELLS | {"ch02_question_shift_check"}
CORRECT_SDPA = make_submission(NOTEBOOK)  # reference code in every solution cell


def with_sdpa(code: str) -> nbformat.NotebookNode:
    return make_submission(NOTEBOOK, {"scaled_dot_product_attention": code})


def crasher():
    return with_sdpa("import os\nos._exit(1)")


def looper():
    return with_sdpa("while True:\n    pass")


def warner():
    nb = make_submission(NOTEBOOK)
    for cell in nb.cells:
        if grade_id(cell) == "scaled_dot_product_attention":
            cell.source = cell.source.replace(
                "def scaled_dot_product_attention(q, k, v, mask=None):",
                "import sys, warnings\n\ndef scaled_dot_product_attention(q, k, v, mask=None):\n"
                "    warnings.warn('a harmless warning on stderr')\n    print('debug', file=sys.stderr)",
            )
    return nb


def tamperer():
    """Wrong code (no 1/sqrt(d_k)), test cells emptied and given 100 points, one test cell deleted."""
    wrong = next(i for i in implementations(NOTEBOOK, "wrong") if i.name == "no_scale")
    nb = make_submission(NOTEBOOK, wrong.cells)
    for cell in nb.cells:
        if is_test_cell(cell):
            cell.source = "pass"
            cell.metadata.nbgrader["points"] = 100
    nb.cells = [c for c in nb.cells if grade_id(c) != "sdpa_batch_dims"]
    return nb


def snooper():
    """Correct code, then a cell that prints every executed cell, hidden tests included."""
    nb = make_submission(NOTEBOOK)
    nb.cells.append(nbformat.v4.new_code_cell("print('\\n'.join(In))\nraise ValueError('\\n'.join(In))"))
    return nb


@pytest.fixture(scope="module")
def misbehaving(tmp_path_factory):
    root = tmp_path_factory.mktemp("misbehaving")
    subs, work = root / "submissions", root / "grading"
    for name, make in [
        ("crasher", crasher),
        ("looper", looper),
        ("warner", warner),
        ("tamperer", tamperer),
        ("snooper", snooper),
    ]:
        write_submission(make(), subs / name / f"{NOTEBOOK}.ipynb")
    (subs / "jsonthing").mkdir()
    (subs / "jsonthing" / f"{NOTEBOOK}.ipynb").write_text(json.dumps({"hello": "world"}))
    (subs / "binary").mkdir()
    (subs / "binary" / f"{NOTEBOOK}.ipynb").write_bytes(bytes(range(256)) * 4)
    out = io.StringIO()
    db_url = f"sqlite:///{root / 'elsewhere.db'}"
    results = grade(subs, Options(workdir=work, limits=Limits(cell_timeout_s=10), db_url=db_url), out=out)
    return {r.student: r for r in results}, subs, work, root, out.getvalue()


def test_every_submission_is_graded(misbehaving):
    results, *_ = misbehaving
    assert sorted(results) == ["binary", "crasher", "jsonthing", "looper", "snooper", "tamperer", "warner"]


def test_a_process_crash_keeps_the_points_earned_before_it(misbehaving):
    result = misbehaving[0]["crasher"]
    assert "ended the Python process (exit code 1)" in result.reason
    assert {c.grade_id for c in result.cells if c.passed} == SOFTMAX_CELLS
    assert all("exit code 1" in c.message for c in result.cells if not c.passed)


def test_an_infinite_loop_is_interrupted_and_the_rest_still_runs(misbehaving):
    result = misbehaving[0]["looper"]
    assert {c.grade_id for c in result.cells if c.passed} == NO_ATTENTION_CELLS
    assert result.score == sum(POINTS[c] for c in NO_ATTENTION_CELLS)


def test_stderr_output_alone_does_not_cost_points(misbehaving):
    result = misbehaving[0]["warner"]
    assert result.score == result.max_score, [(c.grade_id, c.message) for c in result.cells if not c.passed]


def test_students_cannot_change_tests_or_points(misbehaving):
    result = misbehaving[0]["tamperer"]
    assert result.max_score == sum(POINTS.values())
    failed = {c.grade_id for c in result.cells if not c.passed}
    assert failed == next(i for i in implementations(NOTEBOOK, "wrong") if i.name == "no_scale").expect_fail
    assert any("sdpa_batch_dims" in n and "missing" in n for n in result.repairs)


def test_not_a_notebook_gets_a_reason(misbehaving):
    results = misbehaving[0]
    assert "not a valid Jupyter notebook" in results["jsonthing"].reason
    assert "not UTF-8" in results["binary"].reason
    assert results["jsonthing"].score == results["binary"].score == 0


def test_gradebook_can_live_at_another_url(misbehaving):
    root = misbehaving[3]
    assert (root / "elsewhere.db").exists()
    assert not (misbehaving[2] / "gradebook.db").exists()


def test_feedback_redacts_hidden_tests_printed_by_student_code(misbehaving):
    results, subs, work, root, _ = misbehaving
    assert results["snooper"].score == results["snooper"].max_score
    write_feedback(subs, root / "feedback", work)
    page = html.unescape((root / "feedback" / "snooper" / f"{NOTEBOOK}.html").read_text())
    hidden = secret_lines(read(source_notebook(NOTEBOOK)))
    assert not [line for line in hidden if line in page]
