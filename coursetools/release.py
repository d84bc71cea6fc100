"""Generate the student notebooks in chapters/ from the nbgrader sources in solutions/.

We run nbgrader's own generate_assignment preprocessors (minus the ones that need a
gradebook or a course directory), so the released notebooks are exactly what
`nbgrader generate_assignment` would produce: solutions replaced by
`raise NotImplementedError()`, hidden tests removed, cells locked and checksummed.

`release(check=True)` regenerates in memory and compares with the committed files; CI runs it so
a solution edited without `make release` cannot go unnoticed.

Provided cells. An exercise that needs an earlier chapter's pieces gets the course's reference
versions (`course/provided.py`), not the student's earlier answers. In a source notebook, a locked
code cell whose first line is

    # Provided by the course: causal_mask, padding_mask, scaled_dot_product_attention

(names separated by commas) is generated: `release` rewrites the rest of the cell as the imports
those definitions use followed by their source, in the order named, and writes the updated cell
back into solutions/ as well as into the student notebook. `release --check` reports a provided
cell that differs from what `course/provided.py` gives (naming the notebook and the cell), and
`validate_sources` refuses a solution region containing a line of provided code, since the
provided cells are shown to students.

Judge helpers. A notebook may have one locked, ungraded cell whose first line is
`# Judge helpers (hidden): ...` and whose code is all inside a hidden-test region: the helpers
that its judges share. Like a hidden test, that code is removed from the student notebook (its
comments stay); `validate_sources` checks the cell's form.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from autograder import config
from autograder.errors import UsageError
from autograder.model.notebooks import (
    HIDDEN_BEGIN,
    JUDGE_HELPERS_HEADER,
    PROVIDED_HEADER,
    grade_id,
    hidden_test_lines,
    is_judge_helpers_cell,
    is_solution_cell,
    is_test_cell,
    marker,
    nbgrader_meta,
    near_miss_markers,
    read,
    release_notebook,
    solution_paths,
    solution_region_lines,
    split_test,
    without_hidden_tests,
)
from coursetools import layout

PROVIDED_NOTE = "# Reference code from earlier chapters, locked: run it as it is (the grader uses this exact cell)."
_PROVIDED_LINE = re.compile(r"^#\s*Provided by the course:(.*)$")
# Solution and provided lines shorter than this (stripped) are too common to mean anything.
MIN_SHARED_LINE = 12


class SourceError(UsageError, ValueError):
    """A solutions/ notebook breaks a convention the grader relies on."""


def _is_assert_close(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    return name == "assert_close"


# --- provided cells ------------------------------------------------------------------------


class ProvidedModule:
    """The top-level imports and definitions of course/provided.py, read with `ast` (not imported).

    Reading the text gives exactly what `inspect.getsource` would (a definition's lines, with its
    decorators) without running the module, and works the same for functions and classes.
    """

    def __init__(self, path: Path | None = None):
        self.path = Path(path or layout.PROVIDED_MODULE)
        self.text = self.path.read_text(encoding="utf-8")
        lines = self.text.splitlines()
        tree = ast.parse(self.text, filename=str(self.path))
        self.imports: list[tuple[set[str], str]] = []  # (names it binds, its source)
        self.definitions: dict[str, str] = {}  # name -> source of the def/class
        self.uses: dict[str, set[str]] = {}  # name -> every name its body reads
        for index, node in enumerate(tree.body):
            if index == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
                continue  # the module docstring
            if isinstance(node, ast.ImportFrom) and node.module == "__future__":
                continue
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                bound = {(a.asname or a.name).split(".")[0] for a in node.names}
                self.imports.append((bound, ast.get_source_segment(self.text, node) or ""))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                first = min([node.lineno] + [d.lineno for d in node.decorator_list])
                self.definitions[node.name] = "\n".join(lines[first - 1 : node.end_lineno])
                self.uses[node.name] = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
            else:
                raise SourceError(
                    f"{self.path.name} line {node.lineno}: only imports, functions and classes may be provided"
                )

    def problems(self, names: list[str]) -> list[str]:
        """Why a cell naming `names` cannot be generated (unknown names, a missing dependency)."""
        found = []
        for name in names:
            if name not in self.definitions:
                found.append(f"{self.path.name} defines no function or class {name!r}")
                continue
            for needed in sorted(self.uses[name] & set(self.definitions) - set(names) - {name}):
                found.append(f"{name!r} uses {needed!r}: name it in the cell's first line too")
        return found

    def cell_source(self, names: list[str]) -> str:
        """The whole provided cell for `names`: header, note, the imports used, the definitions."""
        used = set().union(*(self.uses[n] for n in names))
        imports = [src for bound, src in self.imports if bound & used]
        parts = ["\n".join([f"{PROVIDED_HEADER} {', '.join(names)}", PROVIDED_NOTE, *imports])]
        parts += [self.definitions[n] for n in names]
        return "\n\n\n".join(parts)

    def code_lines(self) -> dict[str, str]:
        """Every line (spacing normalised, long enough) of every definition -> the definition it is in."""
        return {
            normalised(line): name
            for name, src in self.definitions.items()
            for line in src.splitlines()
            if len(line.strip()) >= MIN_SHARED_LINE
        }


def normalised(line: str) -> str:
    """A line with its spacing normalised: lines that differ only in spacing are the same code (the
    leak tests compare lines this way too)."""
    return " ".join(line.split())


def provided_names(cell: NotebookNode) -> list[str] | None:
    """The names a provided cell's first line asks for, or None if the cell is not one."""
    if cell.get("cell_type") != "code" or not cell.source:
        return None
    match = _PROVIDED_LINE.match(cell.source.splitlines()[0].strip())
    if match is None:
        return None
    return [name.strip() for name in match.group(1).split(",") if name.strip()]


def _cell_name(nb_name: str, index: int, cell: NotebookNode) -> str:
    gid = grade_id(cell)
    return f"{nb_name} cell {index}" + (f" ({gid})" if gid else "")


def refresh_provided_cells(nb: NotebookNode, nb_name: str, module: ProvidedModule | None = None) -> list[str]:
    """Regenerate the provided cells of `nb` in place; return a description of each one changed."""
    module = module or ProvidedModule()
    changed = []
    for index, cell in enumerate(nb.cells):
        names = provided_names(cell)
        if names is None:
            continue
        wanted = module.cell_source(names)
        if cell.source != wanted:
            cell.source = wanted
            changed.append(f"{_cell_name(nb_name, index, cell)}: provided code differs from {module.path.name}")
    return changed


def _provided_problems(path: Path, nb: NotebookNode, module: ProvidedModule) -> list[str]:
    """A provided cell must be a locked, ungraded cell naming what course/provided.py defines;
    no solution region may repeat a line of provided code (students see the provided code)."""
    problems = []
    code = module.code_lines()
    for index, cell in enumerate(nb.cells):
        where = _cell_name(path.name, index, cell)
        names = provided_names(cell)
        if names is not None:
            meta = nbgrader_meta(cell)
            if not meta.get("locked") or meta.get("solution") or meta.get("grade"):
                problems.append(f"{where}: a provided cell must be locked, and neither a solution nor a test")
            if not names:
                problems.append(f"{where}: the provided cell names nothing after {PROVIDED_HEADER!r}")
            problems += [f"{where}: {p}" for p in module.problems(names)]
        if not is_solution_cell(cell):
            continue
        for line in solution_region_lines(cell):
            line = normalised(line)
            if len(line) < MIN_SHARED_LINE or line.endswith(("(", "[", "{")):
                continue  # short lines and bare openers such as `raise ValueError(` say nothing of a solution
            for shared, name in code.items():
                if line in shared or shared in line:
                    problems.append(
                        f"{where}: solution line {line!r} repeats provided code ({module.path.name}: {name})"
                    )
                    break
    return problems


def _judge_helpers_problems(path: Path, nb: NotebookNode) -> list[str]:
    """The judge-helpers cell (`# Judge helpers (hidden): ...`): at most one per notebook, locked and ungraded,
    and all of its code hidden (students get its comments only); no other cell but a test has hidden lines."""
    problems = []
    helpers = [i for i, c in enumerate(nb.cells) if c.get("source", "").lstrip().startswith(JUDGE_HELPERS_HEADER)]
    if len(helpers) > 1:
        problems.append(f"{path.name}: cells {helpers} are judge-helpers cells: a notebook has at most one")
    for index in helpers:
        cell, where = nb.cells[index], _cell_name(path.name, index, nb.cells[index])
        if not is_judge_helpers_cell(cell):
            problems.append(f"{where}: a judge-helpers cell must be a locked code cell, neither a solution nor a test")
        shown = [line for line in without_hidden_tests(cell.source).splitlines() if line.strip()]
        if any(not line.lstrip().startswith("#") for line in shown) or not hidden_test_lines(cell):
            problems.append(
                f"{where}: the code of a judge-helpers cell goes between {HIDDEN_BEGIN!r} and its end (students "
                "get only its comments)"
            )
    for index, cell in enumerate(nb.cells):
        hidden = any(marker(line) == HIDDEN_BEGIN for line in cell.get("source", "").splitlines())
        if hidden and not is_test_cell(cell) and index not in helpers:
            problems.append(f"{_cell_name(path.name, index, cell)}: hidden lines outside a test cell")
    return problems


def validate_sources(paths: list[Path]) -> None:
    """Fail early, with the cell named, on source notebooks the grader cannot use fairly.

    - grade_ids are unique across all notebooks (they are the gradebook export's columns);
    - every test cell has points;
    - every assert and assert_close in a test cell has a message: the feedback shows that
      message, which must name the property that failed ("Tensor-likes are not close!" does not);
    - solution notebooks carry no outputs (they are reviewed as text);
    - a provided cell is locked and names definitions of course/provided.py, and no solution
      region contains a line of provided code (or a line of it contains a solution line);
    - the judge-helpers cell, if any, is locked and ungraded, and its code is all hidden;
    - no line is a near-miss marker: nbgrader reads any line containing "BEGIN SOLUTION", "END HIDDEN TESTS"...
      as a marker, so one not written exactly as the project's would hide lines the project thinks public.
    """
    seen: dict[str, str] = {}
    problems: list[str] = []
    module = ProvidedModule()
    for path in paths:
        try:
            nb = read(path)
        except (OSError, ValueError) as exc:  # nbformat's NotJSONError is a ValueError
            problems.append(f"{path.name}: not a readable notebook ({type(exc).__name__}: {str(exc)[:200]})")
            continue
        problems += _provided_problems(path, nb, module)
        problems += _judge_helpers_problems(path, nb)
        for index, cell in enumerate(nb.cells):
            where = f"{path.name} cell {index}"
            for line in near_miss_markers(cell.get("source", "")):
                read_as = str(marker(line))
                problems.append(
                    f"{where}: the line {line.strip()!r} is read by nbgrader as {read_as!r} (it contains "
                    f"{read_as.removeprefix('### ')!r}) but is not written as one: put {read_as!r} alone "
                    "on its line, or reword it"
                )
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
                split_test(cell.source)
            except ValueError as exc:  # the grader could not split it into its probe and judge when grading
                problems.append(f"{where}: test cell {gid!r}: {exc}")
            try:
                tree = ast.parse(cell.source)
            except SyntaxError as exc:
                problems.append(f"{where}: test cell {gid!r} is not valid Python: {exc}")
                continue
            for node in ast.walk(tree):
                if isinstance(node, ast.Assert) and node.msg is None:
                    problems.append(f"{where}: test cell {gid!r} line {node.lineno}: assert without a message")
                if (
                    isinstance(node, ast.Call)
                    and _is_assert_close(node)
                    and not any(kw.arg == "msg" for kw in node.keywords)
                ):
                    problems.append(f"{where}: test cell {gid!r} line {node.lineno}: assert_close without msg=")
    if problems:
        raise SourceError("the source notebooks have problems:\n" + "\n".join(problems))


@dataclass(frozen=True)
class StaleFile:
    """A file out of date with solutions/ (written by `release`, or that would be with check=True), and why, when
    more can be said than that it differs (a source notebook's stale provided cells)."""

    path: Path
    reasons: tuple[str, ...] = ()


def release(check: bool = False, solutions_dir: Path | None = None, release_dir: Path | None = None) -> list[StaleFile]:
    """Write (or, with check=True, only compare) every student notebook.

    Provided cells of the source notebooks are regenerated first (and, unless check=True,
    written back into solutions/). Returns the files that were out of date (written, or
    that would be): source notebooks with a stale provided cell, then released notebooks.
    """
    paths = solution_paths(solutions_dir)
    if not paths:
        raise SourceError(f"no source notebooks in {solutions_dir or config.SOLUTIONS_DIR}")
    validate_sources(paths)
    module = ProvidedModule()
    stale: list[StaleFile] = []
    for path in paths:
        source = read(path)
        changed = refresh_provided_cells(source, path.name, module)
        if changed:
            stale.append(StaleFile(path, tuple(changed)))
            if not check:
                path.write_text(nbformat.writes(source) + "\n", encoding="utf-8")
        target = layout.released_path(path, release_dir)
        text = nbformat.writes(release_notebook(source)) + "\n"
        current = target.read_text(encoding="utf-8") if target.exists() else None
        if current == text:
            continue
        stale.append(StaleFile(target))
        if not check:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
    return stale
