"""Generate the student notebooks in chapters/ from the nbgrader sources in solutions/.

We run nbgrader's own generate_assignment preprocessors (minus the ones that need a
gradebook or a course directory), so the released notebooks are exactly what
`nbgrader generate_assignment` would produce: solutions replaced by
`raise NotImplementedError()`, hidden tests removed, cells locked and checksummed.

`release(check=True)` regenerates in memory and compares with the committed files; CI runs it so
a solution edited without `make release` cannot go unnoticed.
"""

from __future__ import annotations

import ast
from pathlib import Path

import nbformat
from nbformat import NotebookNode
from nbgrader.preprocessors import (
    CheckCellMetadata,
    ClearHiddenTests,
    ClearMarkScheme,
    ClearOutput,
    ClearSolutions,
    ComputeChecksums,
    LockCells,
)

from autograder import config
from autograder.notebooks import grade_id, is_test_cell, nbgrader_meta, read, solution_paths

HIDDEN_BEGIN = "### BEGIN HIDDEN TESTS"
HIDDEN_END = "### END HIDDEN TESTS"


class SourceError(ValueError):
    """A solutions/ notebook breaks a convention the grader relies on."""


def _pipeline():
    # The order of nbgrader's GenerateAssignment, without IncludeHeaderFooter,
    # InstantiateTests and SaveCells (they need a course directory and a database).
    return [
        LockCells(),
        ClearSolutions(),
        ClearOutput(),
        CheckCellMetadata(),
        ComputeChecksums(),
        ClearHiddenTests(),
        ClearMarkScheme(),
        ComputeChecksums(),
        CheckCellMetadata(),
    ]


def release_notebook(solution: NotebookNode) -> NotebookNode:
    """The student version of one source notebook (the input is not modified)."""
    nb = nbformat.from_dict(solution)
    resources: dict = {}
    for preprocessor in _pipeline():
        nb, resources = preprocessor.preprocess(nb, resources)
    return nb


def hidden_test_lines(cell: NotebookNode) -> list[str]:
    """The lines between the hidden-test markers of a test cell (what students never see)."""
    lines, inside = [], False
    for line in cell.source.splitlines():
        if line.strip() == HIDDEN_BEGIN:
            inside = True
        elif line.strip() == HIDDEN_END:
            inside = False
        elif inside:
            lines.append(line)
    return lines


def secret_lines(source: NotebookNode, min_length: int = 12) -> set[str]:
    """Hidden test lines (stripped) that students never see anywhere in their notebook.

    Short lines and lines that also appear in the visible part (a shared seed line,
    say) are left out: finding those in a feedback page proves nothing.
    """
    visible = {line.strip() for cell in release_notebook(source).cells for line in cell.source.splitlines()}
    hidden = {line.strip() for cell in source.cells if is_test_cell(cell) for line in hidden_test_lines(cell)}
    return {line for line in hidden if len(line) >= min_length and line not in visible}


def _is_assert_close(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    return name == "assert_close"


def validate_sources(paths: list[Path]) -> None:
    """Fail early, with the cell named, on source notebooks the grader cannot use fairly.

    - grade_ids are unique across all notebooks (they are the gradebook export's columns);
    - every test cell has points;
    - every assert and assert_close in a test cell has a message: the feedback shows that
      message, which must name the property that failed ("Tensor-likes are not close!" does not);
    - solution notebooks carry no outputs (they are reviewed as text).
    """
    seen: dict[str, str] = {}
    problems: list[str] = []
    for path in paths:
        nb = read(path)
        for index, cell in enumerate(nb.cells):
            where = f"{path.name} cell {index}"
            if cell.cell_type == "code" and (cell.get("outputs") or cell.get("execution_count")):
                problems.append(f"{where}: has outputs; clear them (solutions are kept output-free)")
            gid = grade_id(cell)
            if gid is None:
                continue
            if gid in seen:
                problems.append(f"{where}: grade_id {gid!r} already used in {seen[gid]}")
            seen[gid] = where
            if not is_test_cell(cell):
                continue
            if not float(nbgrader_meta(cell).get("points", 0)) > 0:
                problems.append(f"{where}: test cell {gid!r} has no points")
            try:
                tree = ast.parse(cell.source)
            except SyntaxError as exc:
                problems.append(f"{where}: test cell {gid!r} is not valid Python: {exc}")
                continue
            for node in ast.walk(tree):
                if isinstance(node, ast.Assert) and node.msg is None:
                    problems.append(f"{where}: test cell {gid!r} line {node.lineno}: assert without a message")
                if _is_assert_close(node) and not any(kw.arg == "msg" for kw in node.keywords):
                    problems.append(f"{where}: test cell {gid!r} line {node.lineno}: assert_close without msg=")
    if problems:
        raise SourceError("\n".join(problems))


def released_path(solution_path: Path, release_dir: Path | None = None) -> Path:
    return Path(release_dir or config.RELEASE_DIR) / solution_path.name


def release(check: bool = False, solutions_dir: Path | None = None, release_dir: Path | None = None) -> list[Path]:
    """Write (or, with check=True, only compare) every student notebook.

    Returns the released notebooks that were out of date (written, or that would be).
    """
    paths = solution_paths(solutions_dir)
    if not paths:
        raise SourceError(f"no source notebooks in {solutions_dir or config.SOLUTIONS_DIR}")
    validate_sources(paths)
    stale = []
    for path in paths:
        target = released_path(path, release_dir)
        text = nbformat.writes(release_notebook(read(path))) + "\n"
        current = target.read_text(encoding="utf-8") if target.exists() else None
        if current == text:
            continue
        stale.append(target)
        if not check:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
    return stale
