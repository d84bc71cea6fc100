"""Every catalogued implementation of exercise 02 is graded through the real autograder.

Wrong implementations must lose exactly the cells their file names; correct ones must
score full marks; and every graded cell's hidden tests must catch at least one wrong
implementation that its visible self-check lets through (otherwise the hidden part
of that cell proves nothing).
"""

from __future__ import annotations

import pytest

from autograder.notebooks import max_points, read, source_notebook
from autograder.samples import implementations

from conftest import NOTEBOOK

WRONG = implementations(NOTEBOOK, "wrong")
CORRECT = implementations(NOTEBOOK, "correct")
ALL_CELLS = list(max_points(read(source_notebook(NOTEBOOK))))


def failed_cells(result) -> set[str]:
    return {c.grade_id for c in result.cells if not c.passed}


def test_catalogue_is_big_enough():
    assert len(WRONG) >= 10 and len(CORRECT) >= 4
    for impl in WRONG:
        assert impl.expect_fail, f"{impl.name}: no expect-fail line"
        assert impl.expect_fail <= set(ALL_CELLS), f"{impl.name}: unknown cells {impl.expect_fail - set(ALL_CELLS)}"


def test_solution_scores_full_marks(catalogue):
    result = catalogue["solution"]
    assert result.score == result.max_score == sum(max_points(read(source_notebook(NOTEBOOK))).values())
    assert not result.reason


def test_released_notebook_scores_zero_without_crashing(catalogue):
    result = catalogue["released"]
    assert result.score == 0 and result.max_score > 0
    assert not result.reason, "the untouched release must run to the end, every test failing on its own"
    assert all("NotImplementedError" in c.message for c in result.cells)


@pytest.mark.parametrize("impl", WRONG, ids=lambda i: i.name)
def test_wrong_implementation_loses_the_right_cells(catalogue, impl):
    result = catalogue[f"wrong-{impl.name}"]
    assert not result.reason, result.reason
    failed = failed_cells(result)
    assert failed == impl.expect_fail, (
        f"{impl.description}\n  should fail: {sorted(impl.expect_fail)}\n  failed:      {sorted(failed)}\n"
        + "\n".join(f"  {c.grade_id}: {c.message}" for c in result.cells if not c.passed)
    )
    for cell in result.cells:
        if not cell.passed:
            assert cell.points == 0 and cell.message, f"{cell.grade_id} failed without a message"


@pytest.mark.parametrize("impl", CORRECT, ids=lambda i: i.name)
def test_alternative_correct_implementation_scores_full_marks(catalogue, impl):
    result = catalogue[f"correct-{impl.name}"]
    assert result.score == result.max_score, [(c.grade_id, c.message) for c in result.cells if not c.passed]


@pytest.mark.parametrize("cell", ALL_CELLS)
def test_hidden_tests_of_each_cell_catch_a_mistake_the_visible_ones_miss(catalogue, catalogue_visible_only, cell):
    caught = sorted(
        impl.name
        for impl in WRONG
        if cell in failed_cells(catalogue[f"wrong-{impl.name}"])
        and cell not in failed_cells(catalogue_visible_only[f"wrong-{impl.name}"])
    )
    assert caught, f"the hidden tests of {cell} catch no catalogued mistake that its visible self-check misses"


def test_visible_checks_pass_on_every_correct_implementation(catalogue_visible_only):
    for impl in CORRECT:
        result = catalogue_visible_only[f"correct-{impl.name}"]
        assert result.score == result.max_score, impl.name
