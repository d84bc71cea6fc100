"""Every catalogued implementation of every exercise is graded through the real autograder.

Wrong implementations must lose exactly the cells their file names; correct ones must
score full marks; the untouched release scores zero with every test failing on its own;
and every graded cell's hidden tests must catch at least one wrong implementation that its
visible self-check lets through (otherwise the hidden part of that cell proves nothing).
All chapters are graded in one `grade` run (and once more against the released notebooks,
for the visible checks alone).
"""

from __future__ import annotations

import os

import pytest

from autograder.model.notebooks import max_points, read, source_notebook
from conftest import catalogued_notebooks
from coursetools.samples import implementations

NOTEBOOKS = catalogued_notebooks()
WRONG = [(nb, impl) for nb in NOTEBOOKS for impl in implementations(nb, "wrong")]
CORRECT = [(nb, impl) for nb in NOTEBOOKS for impl in implementations(nb, "correct")]
CELLS = [(nb, cell) for nb in NOTEBOOKS for cell in max_points(read(source_notebook(nb)))]


def failed_cells(result) -> set[str]:
    return {c.grade_id for c in result.cells if not c.passed}


def case_id(case) -> str:
    notebook, item = case
    return f"{notebook.split('_')[0]}-{getattr(item, 'name', item)}"


def test_there_are_catalogues():
    if os.environ.get("CATALOGUES"):  # a maintainer asked for some chapters only: those must exist
        assert NOTEBOOKS, f"no catalogue matches CATALOGUES={os.environ['CATALOGUES']}"
    else:
        assert "02_dot_product_attention" in NOTEBOOKS and len(NOTEBOOKS) >= 8


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_catalogue_is_big_enough(notebook):
    wrong, correct = implementations(notebook, "wrong"), implementations(notebook, "correct")
    cells = set(max_points(read(source_notebook(notebook))))
    assert len(wrong) >= 8 and len(correct) >= 3, f"{notebook}: {len(wrong)} wrong, {len(correct)} correct"
    for impl in wrong:
        assert impl.expect_fail, f"{impl.name}: no expect-fail line"
        assert impl.expect_fail <= cells, f"{impl.name}: unknown cells {impl.expect_fail - cells}"


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_solution_scores_full_marks(catalogues, notebook):
    result = catalogues[notebook]["solution"]
    assert result.score == result.max_score == sum(max_points(read(source_notebook(notebook))).values())
    assert not result.reason and not result.repairs


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_released_notebook_scores_zero_without_crashing(catalogues, notebook):
    result = catalogues[notebook]["released"]
    assert result.score == 0 and result.max_score > 0
    assert not result.reason, "the untouched release must run to the end, every test failing on its own"
    assert all("NotImplementedError" in c.message for c in result.cells), [(c.grade_id, c.message) for c in result.cells]


@pytest.mark.parametrize("case", WRONG, ids=case_id)
def test_wrong_implementation_loses_the_right_cells(catalogues, case):
    notebook, impl = case
    result = catalogues[notebook][f"wrong-{impl.name}"]
    assert not result.reason, result.reason
    failed = failed_cells(result)
    assert failed == impl.expect_fail, (
        f"{impl.description}\n  should fail: {sorted(impl.expect_fail)}\n  failed:      {sorted(failed)}\n"
        + "\n".join(f"  {c.grade_id}: {c.message}" for c in result.cells if not c.passed)
    )
    for cell in result.cells:
        if not cell.passed:
            assert cell.points == 0 and cell.message, f"{cell.grade_id} failed without a message"


@pytest.mark.parametrize("case", CORRECT, ids=case_id)
def test_alternative_correct_implementation_scores_full_marks(catalogues, catalogues_visible_only, case):
    notebook, impl = case
    for results in (catalogues, catalogues_visible_only):
        result = results[notebook][f"correct-{impl.name}"]
        assert result.score == result.max_score, [(c.grade_id, c.message) for c in result.cells if not c.passed]


@pytest.mark.parametrize("case", CELLS, ids=case_id)
def test_hidden_tests_of_each_cell_catch_a_mistake_the_visible_ones_miss(catalogues, catalogues_visible_only, case):
    notebook, cell = case
    caught = sorted(
        impl.name
        for impl in implementations(notebook, "wrong")
        if cell in failed_cells(catalogues[notebook][f"wrong-{impl.name}"])
        and cell not in failed_cells(catalogues_visible_only[notebook][f"wrong-{impl.name}"])
    )
    assert caught, f"the hidden tests of {cell} catch no catalogued mistake that its visible self-check misses"
