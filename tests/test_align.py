"""align: the notebook to grade is the released skeleton filled with the student's cells.

No kernel runs here: every test inspects the notebook `align` builds. Each result also
goes through `checked`, which asserts what must hold for any submission whatsoever:
a valid nbformat 4.5 notebook, every released cell once and in order, test and locked
cells exactly as in the source (hidden tests and points included), nbgrader metadata
only on the graded cells, no outputs, deterministic, input untouched, and no line of
the instructor's solutions unless the student wrote it.
"""

from __future__ import annotations

import copy
import json
import random

import nbformat
import pytest
from nbformat import NotebookNode

from autograder.grading.align import NOTHING_RECOGNISED, REORDERED, Aligned, align
from autograder.model.notebooks import (
    grade_id,
    hidden_test_lines,
    is_protected_cell,
    is_solution_cell,
    is_test_cell,
    read,
    release_notebook,
    source_notebook,
)
from coursetools.layout import RELEASE_DIR
from coursetools.samples import make_submission, solution_code, untouched_release

NOTEBOOK = "02_dot_product_attention"
SOURCE = read(source_notebook(NOTEBOOK))
RELEASED = release_notebook(SOURCE)
ANSWERS = [grade_id(c) for c in SOURCE.cells if is_solution_cell(c)]  # softmax, scaled_dot_product_attention
TESTS = [grade_id(c) for c in SOURCE.cells if is_test_cell(c)]
RELEASED_IDS = [c.id for c in RELEASED.cells]
SOURCE_BY_GID = {grade_id(c): c for c in SOURCE.cells if grade_id(c)}
RELEASED_BY_GID = {grade_id(c): c for c in RELEASED.cells if grade_id(c)}
REFERENCE = {gid: solution_code(SOURCE_BY_GID[gid]) for gid in ANSWERS}


def _solution_lines() -> set[str]:
    """Lines inside the source's solution regions that a student never sees anywhere."""
    lines: set[str] = set()
    for cell in SOURCE.cells:
        if not is_solution_cell(cell):
            continue
        inside = False
        for line in cell.source.splitlines():
            if line.strip() == "### BEGIN SOLUTION":
                inside = True
            elif line.strip() == "### END SOLUTION":
                inside = False
            elif inside and line.strip():
                lines.add(line.strip())
    visible = [c for c in SOURCE.cells if not is_solution_cell(c)] + list(RELEASED.cells)
    shown = {line.strip() for c in visible for line in c.source.splitlines()}
    return lines - shown


SOLUTION_LINES = _solution_lines()


def lines_of(nb: dict) -> set[str]:
    out = set()
    for cell in nb.get("cells", []) or []:
        source = cell.get("source", "") if isinstance(cell, dict) else ""
        source = "".join(source) if isinstance(source, list) else str(source or "")
        out |= {line.strip() for line in source.splitlines()}
    return out


def checked(submitted: NotebookNode) -> Aligned:
    """align(), with every invariant that holds whatever the student handed in."""
    before = json.dumps(submitted, sort_keys=True, default=str)
    result = align(submitted, RELEASED, SOURCE)
    assert json.dumps(submitted, sort_keys=True, default=str) == before, "align modified its input"
    nb = result.notebook
    leaked = (lines_of(nb) & SOLUTION_LINES) - lines_of(submitted)
    assert not leaked, f"instructor solution lines in the graded notebook: {sorted(leaked)}"
    nbformat.validate(nb)
    assert nb.nbformat == 4 and nb.nbformat_minor == 5
    assert nb.metadata.kernelspec.name == "python3"

    ids = [c.id for c in nb.cells]
    assert len(ids) == len(set(ids)), "cell ids must be unique"
    assert [i for i in ids if i in RELEASED_IDS] == RELEASED_IDS, "every released cell once, in the released order"
    graded_ids = [grade_id(c) for c in nb.cells if grade_id(c)]
    assert graded_ids == list(RELEASED_BY_GID), "nbgrader metadata on the released cells only, each once"
    by_id = {c.id: c for c in nb.cells}
    for original in SOURCE.cells:
        if is_protected_cell(original):
            graded = by_id[original.id]
            assert (graded.cell_type, graded.source, graded.metadata) == (
                original.cell_type,
                original.source,
                original.metadata,
            )
        if is_solution_cell(original):
            answer = by_id[original.id]
            assert answer.metadata.nbgrader == original.metadata.nbgrader and answer.cell_type == "code"
    for graded in nb.cells:
        if graded.cell_type == "code":
            assert graded.outputs == [] and graded.execution_count is None

    again = align(copy.deepcopy(submitted), RELEASED, SOURCE)
    assert again.repairs == result.repairs and nbformat.writes(again.notebook) == nbformat.writes(nb), (
        "not deterministic"
    )
    assert result.recognised >= 0 and all(isinstance(r, str) and r for r in result.repairs)
    return result


def cell(nb: NotebookNode, gid: str) -> NotebookNode:
    return next(c for c in nb.cells if grade_id(c) == gid)


def position(nb: NotebookNode, gid: str) -> int:
    return next(i for i, c in enumerate(nb.cells) if grade_id(c) == gid)


def lost(gid: str) -> str:
    return f"answer cell {gid!r} had lost its grader metadata; the cell in its place was taken as the answer"


def submission(**answers: str) -> NotebookNode:
    return make_submission(NOTEBOOK, answers or None)


def test_solution_lines_are_checked():
    """The leak check has something to look for: the body of both reference solutions."""
    assert len(SOLUTION_LINES) >= 8
    assert "output = weights @ v" in SOLUTION_LINES


# --- Submissions that need nothing -------------------------------------------------------


@pytest.mark.parametrize("make", [untouched_release, make_submission], ids=["untouched", "reference-answers"])
def test_a_normal_submission_needs_no_repair(make):
    sub = make(NOTEBOOK)
    result = checked(sub)
    assert result.repairs == []
    assert result.recognised == len(RELEASED.cells)
    assert len(result.notebook.cells) == len(RELEASED.cells)
    for gid in ANSWERS:
        assert cell(result.notebook, gid).source == cell(sub, gid).source


def test_the_committed_release_is_the_released_notebook():
    committed = read(RELEASE_DIR / f"{NOTEBOOK}.ipynb")
    result = align(make_submission(NOTEBOOK), committed, SOURCE)
    assert result.repairs == [] and result.recognised == len(committed.cells)


def test_hidden_tests_are_run():
    result = checked(submission())
    for gid in TESTS:
        hidden = hidden_test_lines(SOURCE_BY_GID[gid])
        assert hidden and all(line in cell(result.notebook, gid).source for line in hidden)


# --- Answers: never the instructor's code ---------------------------------------------


def test_deleted_answers_run_the_released_stub_not_the_solution():
    sub = submission()
    sub.cells = [c for c in sub.cells if not is_solution_cell(c)]
    result = checked(sub)
    for gid in ANSWERS:
        assert cell(result.notebook, gid).source == RELEASED_BY_GID[gid].source
        assert "raise NotImplementedError()" in cell(result.notebook, gid).source
    assert result.repairs == [
        f"answer cell {gid!r} was missing; the released stub was run (it raises NotImplementedError), "
        "so the tests that need it lose their points"
        for gid in ANSWERS
    ]
    assert result.recognised == len(RELEASED.cells) - len(ANSWERS)


def test_one_deleted_answer_keeps_the_other():
    sub = submission()
    sub.cells = [c for c in sub.cells if grade_id(c) != "softmax"]
    result = checked(sub)
    assert cell(result.notebook, "softmax").source == RELEASED_BY_GID["softmax"].source
    assert cell(result.notebook, "scaled_dot_product_attention").source == REFERENCE["scaled_dot_product_attention"]
    assert len(result.repairs) == 1 and "'softmax' was missing" in result.repairs[0]


def test_emptied_answers_stay_empty():
    sub = submission(softmax="", scaled_dot_product_attention="   \n")
    result = checked(sub)
    assert cell(result.notebook, "softmax").source == ""
    assert cell(result.notebook, "scaled_dot_product_attention").source == "   \n"
    assert result.repairs == []


def test_a_student_who_wrote_the_solution_lines_keeps_them():
    """The leak check allows what the student wrote: here the reference solutions, verbatim."""
    result = checked(submission())
    assert all(cell(result.notebook, gid).source == REFERENCE[gid] for gid in ANSWERS)
    assert SOLUTION_LINES <= lines_of(result.notebook)


# --- Metadata lost, ids lost ----------------------------------------------------------


def strip_metadata(nb: NotebookNode, how: str) -> NotebookNode:
    for c in nb.cells:
        if how == "no-nbgrader":
            c.metadata.pop("nbgrader", None)
        elif how == "empty":
            c.metadata = {}
        else:  # no metadata key at all
            del c["metadata"]
    return nb


@pytest.mark.parametrize("metadata", ["no-nbgrader", "empty", "absent"])
@pytest.mark.parametrize("ids", ["kept", "removed", "regenerated"])
def test_all_metadata_stripped_still_grades_the_students_answers(metadata, ids):
    sub = strip_metadata(submission(), metadata)
    for n, c in enumerate(sub.cells):
        if ids == "removed":
            del c["id"]
        elif ids == "regenerated":
            c.id = f"{n:04x}beef"
    result = checked(sub)
    assert result.recognised == len(RELEASED.cells)
    assert len(result.notebook.cells) == len(RELEASED.cells)
    for gid in ANSWERS:
        assert cell(result.notebook, gid).source == REFERENCE[gid]
    if ids == "kept":
        assert result.repairs == []  # every answer found by its cell id
    else:
        assert result.repairs == [lost(gid) for gid in ANSWERS]


def test_nbformat_40_without_ids():
    data = json.loads(nbformat.writes(submission()))
    data["nbformat_minor"] = 0
    for c in data["cells"]:
        del c["id"]
    sub = nbformat.reads(json.dumps(data), as_version=4)
    assert sub.nbformat_minor == 0 and "id" not in sub.cells[0]
    result = checked(sub)
    assert result.repairs == [] and result.recognised == len(RELEASED.cells)
    assert [c.id for c in result.notebook.cells] == RELEASED_IDS


def test_nbformat_40_without_ids_or_metadata():
    data = json.loads(nbformat.writes(submission()))
    data["nbformat_minor"] = 0
    for c in data["cells"]:
        del c["id"]
        c["metadata"] = {}
    result = checked(nbformat.reads(json.dumps(data), as_version=4))
    assert result.recognised == len(RELEASED.cells)
    assert all(cell(result.notebook, gid).source == REFERENCE[gid] for gid in ANSWERS)


# --- Order and extra cells ----------------------------------------------------------


def test_reordered_cells_are_graded_in_the_released_order():
    sub = submission()
    softmax = sub.cells.pop(position(sub, "softmax"))
    sub.cells.insert(position(sub, "softmax_stable") + 1, softmax)  # the answer after its tests
    a, b = position(sub, "sdpa_mask"), position(sub, "sdpa_batch_dims")
    sub.cells[a], sub.cells[b] = sub.cells[b], sub.cells[a]
    result = checked(sub)
    assert result.repairs == [REORDERED]
    assert [c.id for c in result.notebook.cells] == RELEASED_IDS
    assert cell(result.notebook, "softmax").source == REFERENCE["softmax"]


def test_extra_student_cells_keep_their_place_and_order():
    sub = submission()
    new = nbformat.v4.new_code_cell
    sub.cells.insert(0, nbformat.v4.new_markdown_cell("my notes"))
    sub.cells.insert(1, new("import numpy as np"))
    sub.cells.insert(position(sub, "softmax") + 1, new("print(softmax(torch.tensor([1.0, 2.0])))"))
    at = position(sub, "scaled_dot_product_attention")
    sub.cells[at + 1 : at + 1] = [new("helper = 1"), new("helper += 1")]
    sub.cells.append(new("print('done')"))
    result = checked(sub)
    assert result.repairs == []
    sources = [c.source for c in result.notebook.cells]
    assert sources[:2] == ["my notes", "import numpy as np"]
    nb = result.notebook
    assert nb.cells[position(nb, "softmax") + 1].source == "print(softmax(torch.tensor([1.0, 2.0])))"
    at = position(nb, "scaled_dot_product_attention")
    assert sources[at + 1 : at + 3] == ["helper = 1", "helper += 1"]
    assert sources[-1] == "print('done')"
    assert len(nb.cells) == len(RELEASED.cells) + 6


def test_extra_cells_before_an_answer_without_metadata_stay_before_it():
    """Position matching picks the answer among the cells of its slot by its def line."""
    sub = strip_metadata(submission(), "empty")
    for n, c in enumerate(sub.cells):
        c.id = f"new-{n}"
    at = position(make_submission(NOTEBOOK), "softmax")
    sub.cells.insert(at, nbformat.v4.new_code_cell("EPS = 1e-9"))
    sub.cells.insert(at + 2, nbformat.v4.new_code_cell("softmax(torch.zeros(3))"))
    result = checked(sub)
    nb = result.notebook
    at = position(nb, "softmax")
    assert nb.cells[at].source == REFERENCE["softmax"]
    assert nb.cells[at - 1].source == "EPS = 1e-9" and nb.cells[at + 1].source == "softmax(torch.zeros(3))"


# --- Duplicates ---------------------------------------------------------------------


def duplicate(sub: NotebookNode, gid: str, source: str | None = None, before: bool = False) -> NotebookNode:
    at = position(sub, gid)
    twin = copy.deepcopy(sub.cells[at])
    twin.id = "pasted-copy"
    if source is not None:
        twin.source = source
    sub.cells.insert(at if before else at + 1, twin)
    return sub


def test_a_duplicated_answer_keeps_both_copies_in_order():
    fixed = REFERENCE["softmax"]
    sub = duplicate(submission(softmax="def softmax(x, dim=-1):\n    return x  # first try"), "softmax", fixed)
    result = checked(sub)
    nb = result.notebook
    at = position(nb, "softmax")
    assert nb.cells[at].source.endswith("# first try")
    assert nb.cells[at + 1].source == fixed and "nbgrader" not in nb.cells[at + 1].metadata
    assert nb.cells[at + 1].cell_type == "code"
    assert result.repairs == [
        "answer cell 'softmax' appears 2 times; the copies were run right after it, in the submitted order"
    ]


def test_a_copy_of_an_answer_further_down_runs_right_after_the_answer():
    sub = submission(softmax="def softmax(x, dim=-1):\n    return x  # first try")
    twin = copy.deepcopy(cell(sub, "softmax"))
    twin.id, twin.source = "pasted-copy", REFERENCE["softmax"]
    sub.cells.insert(position(sub, "softmax_stable") + 1, twin)
    sub.cells.insert(position(sub, "softmax") + 1, nbformat.v4.new_code_cell("scratch = 1"))
    result = checked(sub)
    nb = result.notebook
    at = position(nb, "softmax")
    assert [c.source for c in nb.cells[at + 1 : at + 3]] == ["scratch = 1", REFERENCE["softmax"]]
    assert position(nb, "softmax_values") == at + 3
    assert len(result.repairs) == 1 and "'softmax' appears 2 times" in result.repairs[0]


def test_a_copied_answer_rewritten_as_the_next_answer_fills_its_slot():
    """Copy-paste keeps metadata: the 'copy of softmax' holding the attention code is that answer."""
    sub = submission()
    at = position(sub, "scaled_dot_product_attention")
    rewritten = copy.deepcopy(cell(sub, "softmax"))
    rewritten.id, rewritten.source = "pasted-copy", REFERENCE["scaled_dot_product_attention"]
    sub.cells[at] = rewritten
    result = checked(sub)
    assert cell(result.notebook, "scaled_dot_product_attention").source == REFERENCE["scaled_dot_product_attention"]
    assert cell(result.notebook, "softmax").source == REFERENCE["softmax"]
    assert len(result.notebook.cells) == len(RELEASED.cells)
    assert result.repairs == [
        "answer cell 'scaled_dot_product_attention' carried the grader metadata of cell 'softmax'; "
        "the cell in its place was taken as the answer"
    ]


def test_a_duplicated_test_cell_is_dropped():
    result = checked(duplicate(submission(), "softmax_values"))
    assert len(result.notebook.cells) == len(RELEASED.cells)
    assert result.repairs == ["a copy of test cell 'softmax_values' was removed; the test runs once"]


def test_a_duplicated_test_cell_without_metadata_is_dropped():
    sub = duplicate(submission(), "softmax_values")
    sub.cells[position(sub, "softmax_values") + 1].metadata = {}
    result = checked(sub)
    assert len(result.notebook.cells) == len(RELEASED.cells)
    assert result.repairs == ["a copy of test cell 'softmax_values' was removed; the test runs once"]


@pytest.mark.parametrize("before", [False, True], ids=["pasted-below", "pasted-above"])
def test_a_test_cell_copied_and_filled_with_student_code_is_kept_ungraded(before):
    code = "print(softmax(torch.tensor([3.0, 4.0])))"
    result = checked(duplicate(submission(), "softmax_values", code, before=before))
    nb = result.notebook
    kept = next(c for c in nb.cells if c.source == code)
    assert kept.cell_type == "code" and "nbgrader" not in kept.metadata
    assert cell(nb, "softmax_values").source == SOURCE_BY_GID["softmax_values"].source
    offset = -1 if before else 1
    assert nb.cells[position(nb, "softmax_values") + offset].source == code
    assert result.repairs == [
        "a copy of test cell 'softmax_values' holding other code was run as an ordinary cell (not graded)"
    ]


# --- Cell types toggled -------------------------------------------------------------


def test_an_answer_turned_into_markdown_is_run_as_code():
    sub = submission()
    sub.cells[position(sub, "softmax")] = nbformat.from_dict({**cell(sub, "softmax"), "cell_type": "markdown"})
    for key in ("outputs", "execution_count"):
        sub.cells[position(sub, "softmax")].pop(key)
    result = checked(sub)
    assert cell(result.notebook, "softmax").cell_type == "code"
    assert cell(result.notebook, "softmax").source == REFERENCE["softmax"]
    assert result.repairs == ["answer cell 'softmax' had been turned into markdown; it was run as code"]


@pytest.mark.parametrize("back_to_code", [True, False])
def test_an_answer_toggled_to_markdown_losing_its_metadata_is_found_by_position(back_to_code):
    sub = submission()
    at = position(sub, "scaled_dot_product_attention")
    make = nbformat.v4.new_code_cell if back_to_code else nbformat.v4.new_markdown_cell
    sub.cells[at] = make(REFERENCE["scaled_dot_product_attention"])  # a new cell: new id, no metadata
    result = checked(sub)
    answer = cell(result.notebook, "scaled_dot_product_attention")
    assert (answer.cell_type, answer.source) == ("code", REFERENCE["scaled_dot_product_attention"])
    expected = [lost("scaled_dot_product_attention")]
    if not back_to_code:
        expected.append("answer cell 'scaled_dot_product_attention' had been turned into markdown; it was run as code")
    assert result.repairs == expected
    assert len(result.notebook.cells) == len(RELEASED.cells)


def test_a_stray_markdown_cell_is_not_taken_for_a_missing_answer():
    sub = submission()
    sub.cells[position(sub, "softmax")] = nbformat.v4.new_markdown_cell("I could not do this one.")
    result = checked(sub)
    nb = result.notebook
    assert cell(nb, "softmax").source == RELEASED_BY_GID["softmax"].source
    assert nb.cells[position(nb, "softmax") - 1].source == "I could not do this one."


# --- Test and locked cells tampered with --------------------------------------------


def tamper(how: str):
    def change(c: NotebookNode) -> None:
        if how == "blanked":
            c.source = ""
        elif how == "weakened":
            c.source = "pass"
        elif how == "relabelled-as-solution":
            c.metadata.nbgrader.update(solution=True, grade=False)
        elif how == "1000-points":
            c.metadata.nbgrader["points"] = 1000
        elif how == "renamed":
            c.metadata.nbgrader["grade_id"] = "my_cell"
        elif how == "to-markdown":
            c.cell_type = "markdown"
            del c["outputs"], c["execution_count"]
        elif how == "blanked-no-metadata":
            c.source, c.metadata = "", {}

    return change


TAMPERING = {
    "deleted": "test cell 'softmax_dim' was missing and was put back",
    "blanked": "test cell 'softmax_dim' was modified; the original was run",
    "weakened": "test cell 'softmax_dim' was modified; the original was run",
    "blanked-no-metadata": "test cell 'softmax_dim' was modified; the original was run",
    "relabelled-as-solution": "test cell 'softmax_dim' had its grading metadata changed; the original was run",
    "1000-points": "test cell 'softmax_dim' had its grading metadata changed; the original was run",
    "renamed": "test cell 'softmax_dim' had its grading metadata changed; the original was run",
    "to-markdown": "test cell 'softmax_dim' was changed to markdown; the original was run",
}


@pytest.mark.parametrize("how", list(TAMPERING))
def test_a_tampered_test_cell_runs_as_the_source_has_it(how):
    sub = submission()
    if how == "deleted":
        sub.cells = [c for c in sub.cells if grade_id(c) != "softmax_dim"]
    else:
        tamper(how)(sub.cells[position(sub, "softmax_dim")])
    result = checked(sub)
    graded = cell(result.notebook, "softmax_dim")
    assert graded.source == SOURCE_BY_GID["softmax_dim"].source  # hidden tests included
    assert graded.metadata.nbgrader["points"] == SOURCE_BY_GID["softmax_dim"].metadata.nbgrader["points"]
    assert result.repairs == [TAMPERING[how]]
    assert len(result.notebook.cells) == len(RELEASED.cells)


def test_every_test_cell_tampered_at_once():
    """The old grader's tamperer: tests emptied and worth 100 points, one deleted."""
    sub = submission()
    for c in sub.cells:
        if is_test_cell(c):
            c.source = "pass"
            c.metadata.nbgrader["points"] = 100
    sub.cells = [c for c in sub.cells if grade_id(c) != "sdpa_batch_dims"]
    result = checked(sub)
    points = {gid: cell(result.notebook, gid).metadata.nbgrader["points"] for gid in TESTS}
    assert points == {gid: SOURCE_BY_GID[gid].metadata.nbgrader["points"] for gid in TESTS}
    assert "test cell 'sdpa_batch_dims' was missing and was put back" in result.repairs
    assert len(result.repairs) == len(TESTS)


def test_a_modified_locked_cell_is_restored():
    sub = submission()
    cell(sub, "setup").source = "device = 'cpu'"
    cell(sub, "intro").source = "# My notebook"
    result = checked(sub)
    assert result.repairs == [
        "locked cell 'intro' was modified; the original was put back",
        "locked cell 'setup' was modified; the original was run",
    ]


# --- Not this notebook, nothing at all ----------------------------------------------


def other_chapter() -> NotebookNode:
    """A small notebook of another chapter: its own grade_ids, and cell ids that collide with ours."""
    new = nbformat.v4

    def graded(c, **meta):
        c.metadata["nbgrader"] = {"schema_version": 3, "grade": False, "solution": False, "locked": False, **meta}
        return c

    cells = [
        graded(new.new_markdown_cell("# Exercise 03: multi-head attention"), grade_id="intro_03", locked=True),
        graded(new.new_code_cell("import torch\ntorch.manual_seed(0)"), grade_id="setup_03", locked=True),
        new.new_markdown_cell("## 1. Split the heads"),
        graded(
            new.new_code_cell("def split_heads(x, h):\n    return x.view(*x.shape[:-1], h, -1)"),
            grade_id="split_heads",
            solution=True,
        ),
        graded(
            new.new_code_cell("assert split_heads(torch.zeros(2, 8), 2).shape == (2, 2, 4), 'shape'"),
            grade_id="split_heads_shape",
            grade=True,
            points=1,
        ),
    ]
    for c, cid in zip(cells, ["intro", "setup", "text-02", "split-heads", "softmax-values"], strict=False):
        c.id = cid
    return new.new_notebook(cells=cells)


def test_a_notebook_of_another_chapter_is_not_recognised():
    result = checked(other_chapter())
    assert result.recognised == 0
    assert result.repairs == [NOTHING_RECOGNISED]
    sources = [c.source for c in result.notebook.cells]
    assert sources[:5] == [c.source for c in other_chapter().cells]  # kept, first, with no grader role
    for gid in ANSWERS:
        assert cell(result.notebook, gid).source == RELEASED_BY_GID[gid].source


SCRATCH = {"cell_type": "code", "source": "x = 1", "metadata": {}, "outputs": []}


@pytest.mark.parametrize("cells", [[], [SCRATCH]], ids=["empty", "one-scratch-cell"])
def test_an_empty_notebook_is_not_recognised(cells):
    sub = nbformat.from_dict({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells})
    result = checked(sub)
    assert result.recognised == 0 and result.repairs == [NOTHING_RECOGNISED]
    assert len(result.notebook.cells) == len(RELEASED.cells) + len(cells)


def test_malformed_cells_do_not_stop_alignment():
    sub = submission()
    sub.cells[0]["metadata"] = None
    sub.cells[1]["metadata"]["nbgrader"] = "oops"
    heading = {"cell_type": "heading", "source": ["a ", "b"], "metadata": {"nbgrader": {"grade_id": 7}}}
    odd = {
        "cell_type": "code",
        "source": None,
        "id": "bad id!",
        "metadata": {"collapsed": "yes", "tags": ["skip-execution"]},
    }
    sub.cells += [nbformat.from_dict(heading), nbformat.from_dict(odd)]
    result = checked(sub)
    assert result.recognised == len(RELEASED.cells)
    assert [c.source for c in result.notebook.cells[-2:]] == ["a b", ""]
    assert all(c.metadata == {} for c in result.notebook.cells[-2:])


# --- Anything at all ----------------------------------------------------------------


ACTIONS = ["delete", "copy", "move", "strip", "drop-id", "new-id", "toggle", "edit", "extra", "relabel", "blank"]


def mutate(nb: NotebookNode, rng: random.Random) -> NotebookNode:
    """Random edits a student (or a student's editor) could make."""
    for _ in range(rng.randint(1, 6)):
        if not nb.cells:
            nb.cells.append(nbformat.v4.new_code_cell("x = 1"))
        at = rng.randrange(len(nb.cells))
        c = nb.cells[at]
        action = rng.choice(ACTIONS)
        if action == "delete":
            nb.cells.pop(at)
        elif action == "copy":
            twin = copy.deepcopy(c)
            twin["id"] = f"copy{rng.randrange(10**6)}"
            nb.cells.insert(rng.randrange(len(nb.cells) + 1), twin)
        elif action == "move":
            nb.cells.insert(rng.randrange(len(nb.cells)), nb.cells.pop(at))
        elif action == "strip":
            c["metadata"] = rng.choice([{}, {"tags": []}])
        elif action == "drop-id":
            c.pop("id", None)
        elif action == "new-id":
            c["id"] = f"n{rng.randrange(10**6)}"
        elif action == "toggle":
            c["cell_type"] = rng.choice(["code", "markdown", "raw"])
        elif action == "edit":
            c["source"] = c.get("source", "") + rng.choice(["\n# edited", "\n\n", "  ", "\nprint(1)"])
        elif action == "extra":
            nb.cells.insert(at, nbformat.v4.new_code_cell(rng.choice(["", "y = 2", "softmax = None"])))
        elif action == "relabel":
            meta = c.setdefault("metadata", {}).setdefault("nbgrader", {})
            claims = [{"solution": True}, {"grade": True, "points": 99}, {"grade_id": rng.choice(ANSWERS + TESTS)}]
            meta.update(rng.choice(claims))
        elif action == "blank":
            c["source"] = ""
    return nb


@pytest.mark.parametrize("seed", range(4))
def test_random_edits_never_break_the_invariants(seed):
    rng = random.Random(seed)
    for _ in range(25):
        base = rng.choice([submission, lambda: untouched_release(NOTEBOOK)])()
        checked(mutate(base, rng))


def test_an_answer_written_in_a_cell_of_its_own_is_not_overwritten_by_the_stub():
    """The student deleted the answer cell and wrote the function in a new cell above it:
    putting the released stub back would redefine it as `raise NotImplementedError()`."""
    sub = submission()
    code = cell(sub, "scaled_dot_product_attention").source
    sub.cells = [c for c in sub.cells if grade_id(c) != "scaled_dot_product_attention"]
    sub.cells.insert(position(sub, "softmax_stable") + 1, nbformat.v4.new_code_cell(code))
    result = checked(sub)
    assert "raise NotImplementedError" not in cell(result.notebook, "scaled_dot_product_attention").source
    assert any("defines scaled_dot_product_attention in another cell" in r for r in result.repairs), result.repairs
    runs = [c.source for c in result.notebook.cells if c.cell_type == "code"]
    assert code in runs and runs.index(code) < [
        grade_id(c) for c in result.notebook.cells if c.cell_type == "code"
    ].index("sdpa_worked_examples")


def test_a_release_that_is_not_of_its_source_is_a_usage_error_not_a_traceback():
    """A source edited since `make release`: the CLI prints the message (a UsageError), it is no bug of the grader."""
    from autograder.errors import UsageError
    from autograder.grading.align import ReleaseMismatch

    shorter = copy.deepcopy(RELEASED)
    shorter.cells.pop()
    with pytest.raises(ReleaseMismatch, match="run make release") as raised:
        align(RELEASED, shorter, SOURCE)
    assert isinstance(raised.value, UsageError)
    renamed = copy.deepcopy(RELEASED)
    renamed.cells[1].id = "not-the-source-id"
    with pytest.raises(ReleaseMismatch, match="released cell 2 is not the source's"):
        align(RELEASED, renamed, SOURCE)
