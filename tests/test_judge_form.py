"""Every hidden test is a probe and a judge (issue: verdicts outside the student's process), and a judge never
names what the student wrote: what it compares with, it computes itself."""

from __future__ import annotations

import ast

import pytest

from autograder.model.notebooks import HIDDEN_BEGIN, grade_id, is_test_cell, read, source_notebook, split_test
from coursetools.manifest import load

EXERCISES = [(chapter.exercise, chapter.builds) for chapter in load().chapters if chapter.exercise]


def names_in(source: str) -> set[str]:
    return {node.id for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Name)}


@pytest.mark.parametrize(("notebook", "builds"), EXERCISES, ids=[e for e, _ in EXERCISES])
def test_every_hidden_test_is_decided_by_a_judge_that_never_names_student_code(notebook, builds):
    cells = [
        cell for cell in read(source_notebook(notebook)).cells if is_test_cell(cell) and HIDDEN_BEGIN in cell.source
    ]
    assert cells, f"{notebook} has no hidden tests"
    for cell in cells:
        parts = split_test(cell.source)
        assert parts.has_judge, f"{notebook}/{grade_id(cell)}: its hidden test is not written as probe + judge"
        named = names_in(parts.judge) & set(builds)
        assert not named, f"{notebook}/{grade_id(cell)}: the judge names what the student wrote: {sorted(named)}"
        assert "probe" in names_in(parts.kernel), f"{notebook}/{grade_id(cell)}: the probe hands nothing over"


def _padded(node: ast.AST) -> bool:
    """`xs + [None] * n`: a list padded on purpose, so that a short one shows up as None entries."""
    return (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Add)
        and isinstance(node.right, ast.BinOp)
        and isinstance(node.right.left, ast.List)
    )


def loose_zips(source: str) -> int:
    """zip() calls over the probe's data without strict=True: a list that student code emptied or shortened
    would be checked fewer times, or not at all (a padded list, `xs + [None] * n`, is checked entry by entry)."""
    loose = 0
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "zip"):
            continue
        if any(k.arg == "strict" and getattr(k.value, "value", None) is True for k in node.keywords):
            continue
        over_probe = [a for a in node.args if "probe" in {n.id for n in ast.walk(a) if isinstance(n, ast.Name)}]
        loose += sum(1 for a in over_probe if not _padded(a))
    return loose


@pytest.mark.parametrize(("notebook", "builds"), EXERCISES, ids=[e for e, _ in EXERCISES])
def test_judges_zip_strictly(notebook, builds):
    for cell in read(source_notebook(notebook)).cells:
        if is_test_cell(cell) and HIDDEN_BEGIN in cell.source:
            assert loose_zips(split_test(cell.source).judge) == 0, f"{notebook}/{grade_id(cell)}: zip(..., strict=True)"


def test_a_loose_zip_is_found():
    assert loose_zips("for a, b in zip(x, probe):\n    pass") == 1
    assert loose_zips("for a, b in zip(x, probe['cases']):\n    pass") == 1
    assert loose_zips("for a, b in zip(x, probe, strict=True):\n    pass") == 0
    assert loose_zips("for a, b in zip(x, probe['out'] + [None] * 4):\n    pass") == 0
    assert loose_zips("for a, b in zip(got, want):\n    pass") == 0
