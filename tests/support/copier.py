"""The copier: what a student hands in who pastes code the course publishes instead of writing it.

For an exercise notebook, the copier takes the released notebook and replaces each answer cell
(`YOUR CODE HERE`) by a definition of every name that cell asks for (the functions and classes its stub
defines), found in what a student can read: the lessons (their code cells and code blocks), the lessons
as notebooks, the student notebooks (provided cells included), and every Python file of the published
tree. The definition comes with what it needs from the same place: the helper functions and classes it
uses (transitively), the module-level constants and the imports of that file or lesson.

A name may be defined in several places (chapter 01's numpy `softmax` and chapter 02's): the copier
hands in one submission per choice (`variants`), the k-th one taking each name's k-th definition, and
is scored by its best variant. It does not rename or adapt anything: it measures what copying earns,
not what a student could make of what they read.

    python tests/support/copier.py PUBLISHED_TREE NOTEBOOK OUT   # writes OUT/copier-<k>/<NOTEBOOK>.ipynb
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from autograder.model.notebooks import grade_id, is_solution_cell, myst_code, without_magics


@dataclass(frozen=True)
class Source:
    """A piece of published text that holds code: a file, or a lesson's code cells read as one program."""

    label: str  # where it comes from, e.g. "course/provided.py" or "chapters/07_encoder_block.md"
    code: str


@dataclass(frozen=True)
class Found:
    """One definition of a name, with everything it needs from its source, ready to paste."""

    name: str
    source: str
    paste: str


def notebook_code(path: Path) -> str:
    nb = nbformat.read(str(path), as_version=4)
    return "\n\n".join(without_magics(c.source) for c in nb.cells if c.cell_type == "code")


def published_sources(tree: Path, lessons_only: bool = False) -> list[Source]:
    """Everything with code that a student can read in a published tree (or in a course checkout)."""
    tree = Path(tree)
    found = []
    for path in sorted(tree.rglob("*")):
        relative = path.relative_to(tree).as_posix()
        if not path.is_file() or any(
            part.startswith((".", "_build", "_vendor")) for part in path.relative_to(tree).parts
        ):
            continue
        is_lesson = path.suffix == ".md" or relative.startswith("lessons/")
        if lessons_only and not is_lesson:
            continue
        if path.suffix == ".md":
            code = myst_code(path.read_text(encoding="utf-8"), path.parent)
        elif path.suffix == ".ipynb":
            code = notebook_code(path)
        elif path.suffix == ".py":
            code = path.read_text(encoding="utf-8")
        else:
            continue
        if code.strip():
            found.append(Source(relative, code))
    return found


def _statements(code: str) -> list[ast.stmt]:
    """The top-level statements of `code`; a piece that does not parse is read block by block."""
    try:
        return ast.parse(code).body
    except SyntaxError:
        pass
    statements: list[ast.stmt] = []
    for block in code.split("\n\n\n"):
        try:
            statements += ast.parse(block).body
        except SyntaxError:
            continue
    return statements


def _bound(node: ast.stmt) -> set[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return set()


def _pasteable(node: ast.stmt) -> bool:
    """Definitions, imports and simple constants: what a copier carries along (not loops, plots, prints)."""
    if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "course":
        return False  # the grader has no `course` package: the copier pastes those definitions themselves
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)):
        return True
    if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
        return all(
            isinstance(
                n,
                (
                    ast.Constant,
                    ast.Name,
                    ast.Attribute,
                    ast.Tuple,
                    ast.List,
                    ast.UnaryOp,
                    ast.BinOp,
                    ast.Load,
                    ast.Store,
                    ast.USub,
                    ast.Mult,
                    ast.Add,
                    ast.Sub,
                    ast.Div,
                    ast.Pow,
                ),
            )
            for n in ast.walk(node.value)
        )
    return False


def definitions(source: Source) -> list[Found]:
    """Every top-level function and class of `source`, each with what it needs from `source`."""
    statements = [s for s in _statements(source.code) if _pasteable(s)]
    segments = [ast.unparse(s) for s in statements]
    found = []
    for index, node in enumerate(statements):
        if (
            not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            or "NotImplementedError" in segments[index]
        ):
            continue  # an exercise's own stub is no answer
        wanted = {index}
        names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {node.name}
        grew = True
        while grew:  # the latest earlier binding of each name used, and what that uses in turn
            grew = False
            for name in sorted(names):
                binders = [
                    i
                    for i, s in enumerate(statements)
                    if name in _bound(s) and (i <= index or not isinstance(s, (ast.Import, ast.ImportFrom)))
                ]
                before = [i for i in binders if i <= index] or binders
                if before and before[-1] not in wanted:
                    chosen = before[-1]
                    wanted.add(chosen)
                    names |= {n.id for n in ast.walk(statements[chosen]) if isinstance(n, ast.Name)}
                    grew = True
        imports = [i for i in sorted(wanted) if isinstance(statements[i], (ast.Import, ast.ImportFrom))]
        rest = [i for i in sorted(wanted) if i not in imports and i != index]
        paste = "\n\n".join([segments[i] for i in imports + rest] + [segments[index]])
        found.append(Found(node.name, source.label, paste))
    return found


def _preference(source: Source) -> tuple[int, str]:
    """Course modules first, then lessons, then notebooks: variant 0 takes every name from one place
    where it can (pieces written to work together)."""
    label = source.label
    rank = (
        0 if label.startswith("course/") else 1 if label.endswith(".md") else 2 if label.startswith("lessons/") else 3
    )
    return rank, label


def asked_names(cell: NotebookNode) -> list[str]:
    """The functions and classes an answer cell's stub defines: what the exercise asks for there."""
    try:
        tree = ast.parse(cell.source)
    except SyntaxError:
        return []
    return [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]


def copier_submissions(
    released: NotebookNode, sources: list[Source]
) -> list[tuple[NotebookNode, dict[str, list[str]]]]:
    """The copier's submissions for one released notebook: (notebook, {grade_id: where each pasted name
    came from}) per variant; a single untouched copy when nothing can be found."""
    index: dict[str, list[Found]] = {}
    for source in sorted(sources, key=_preference):
        for item in definitions(source):
            if all(
                item.paste != other.paste for other in index.get(item.name, [])
            ):  # a provided cell repeats course code
                index.setdefault(item.name, []).append(item)
    cells = [c for c in released.cells if is_solution_cell(c) and c.cell_type == "code"]
    wanted = {name for cell in cells for name in asked_names(cell)}
    count = max([len(index.get(name, [])) for name in wanted] + [1])
    variants = []
    for k in range(count):
        nb = nbformat.from_dict(released)
        origins: dict[str, list[str]] = {}
        for cell in nb.cells:
            if not (is_solution_cell(cell) and cell.cell_type == "code"):
                continue
            pasted = []
            for name in asked_names(cell):
                choices = index.get(name, [])
                if choices:
                    item = choices[k % len(choices)]
                    pasted.append(item.paste)
                    origins.setdefault(grade_id(cell) or "?", []).append(f"{name} from {item.source}")
            if pasted:
                cell.source = "\n\n\n".join(pasted)
        variants.append((nb, origins))
    return variants


if __name__ == "__main__":
    tree, notebook, out = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    released = nbformat.read(str(tree / "chapters" / f"{notebook}.ipynb"), as_version=4)
    for k, (nb, origins) in enumerate(copier_submissions(released, published_sources(tree))):
        target = out / f"copier-{k}" / f"{notebook}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, str(target))
        print(target, origins)
