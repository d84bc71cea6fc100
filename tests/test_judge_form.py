"""Every hidden test is a probe and a judge (issue: verdicts outside the student's process), and a judge never
names what the student wrote: what it compares with, it computes itself. Helpers that several judges of a
notebook share are written once, in its judge-helpers cell, whose code students never get."""

from __future__ import annotations

import ast

import pytest

from autograder.model.notebooks import (
    HIDDEN_BEGIN,
    JUDGE_HELPERS_HEADER,
    grade_id,
    hidden_test_lines,
    is_judge_helpers_cell,
    is_test_cell,
    nbgrader_meta,
    read,
    release_notebook,
    source_notebook,
    split_test,
)
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


def defined_names(source: str) -> set[str]:
    """The functions and classes a piece of code defines at its top level (a method or a nested function is not
    one: it belongs to its definition)."""
    found: set[str] = set()
    stack = list(ast.parse(source).body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
        else:  # statements inside if/for/with/try at the top level
            stack += [child for child in ast.iter_child_nodes(node) if isinstance(child, ast.stmt)]
    return found


def test_defined_names_are_the_top_level_ones():
    code = "def a():\n    def inner():\n        pass\nclass B:\n    def forward(self):\n        pass\n"
    code += "if x:\n    def c():\n        pass\n"
    assert defined_names(code) == {"a", "B", "c"}


def judge_helpers(nb) -> list:
    return [c for c in nb.cells if c.get("source", "").startswith(JUDGE_HELPERS_HEADER)]


@pytest.mark.parametrize(("notebook", "builds"), EXERCISES, ids=[e for e, _ in EXERCISES])
def test_a_helper_is_written_once(notebook, builds):
    """A function or class that two judges need goes into the judge-helpers cell, once: no name is defined in
    two judges of a notebook, nor in a judge and the judge-helpers cell."""
    nb = read(source_notebook(notebook))
    helpers = judge_helpers(nb)
    shared = defined_names("\n".join(hidden_test_lines(helpers[0]))) if helpers else set()
    where: dict[str, str] = {name: "the judge-helpers cell" for name in shared}
    for cell in nb.cells:
        if not (is_test_cell(cell) and HIDDEN_BEGIN in cell.source):
            continue
        gid = grade_id(cell)
        for name in sorted(defined_names(split_test(cell.source).judge)):
            assert name not in where, (
                f"{notebook}/{gid}: its judge defines {name}, as {where[name]} does: write it once, in the "
                f"judge-helpers cell ({JUDGE_HELPERS_HEADER!r})"
            )
            where[name] = f"the judge of {gid}"


@pytest.mark.parametrize(("notebook", "builds"), EXERCISES, ids=[e for e, _ in EXERCISES])
def test_the_judge_helpers_cell_is_hidden_ungraded_and_the_judges_own(notebook, builds):
    nb = read(source_notebook(notebook))
    helpers = judge_helpers(nb)
    assert len(helpers) <= 1, f"{notebook}: one judge-helpers cell at most"
    if not helpers:
        return
    cell = helpers[0]
    meta = nbgrader_meta(cell)
    assert is_judge_helpers_cell(cell) and meta.get("locked") and not meta.get("grade") and not meta.get("points"), (
        f"{notebook}: the judge-helpers cell is a locked code cell that is not graded"
    )
    body = "\n".join(hidden_test_lines(cell))
    assert defined_names(body), f"{notebook}: the judge-helpers cell defines nothing"
    released = next(c for c in release_notebook(nb).cells if grade_id(c) == grade_id(cell))
    shown = [line for line in released.source.splitlines() if line.strip()]
    assert shown and all(line.startswith("#") for line in shown), (
        f"{notebook}: students get only the judge-helpers cell's comments, got {shown}"
    )
    named = names_in(body) & set(builds)
    assert not named, f"{notebook}: the judge helpers name what the student wrote: {sorted(named)}"
    # the kernel runs the student's copy (comments): a probe or visible check may not need a helper, unless
    # another cell of the notebook defines the same name for the kernel (a visible test-helpers cell)
    others = [c for c in nb.cells if c.cell_type == "code" and not is_test_cell(c) and not is_judge_helpers_cell(c)]
    kernel_defined = set().union(*(defined_names(c.source) for c in others))
    for test in nb.cells:
        if is_test_cell(test):
            needed = names_in(split_test(test.source).kernel) & (defined_names(body) - kernel_defined)
            assert not needed, f"{notebook}/{grade_id(test)}: the kernel part uses judge helpers {sorted(needed)}"
