"""Pairs of students whose answer cells are unusually similar: for the instructor to review.

Never a verdict: short exercises converge, and two honest students can write the same
five lines. The report lists the top pairs with their score and the two answers side by
side; a person decides.

How a score is computed, per notebook:
1. each answer (solution) cell is parsed with `ast` and normalised: comments and docstrings
   are gone (they are not in the tree), every name bound in the cell (parameters, local
   variables, helper functions, loop variables) becomes one placeholder, constants become
   their type; attribute names and names the cell does not bind (`torch`, `math`,
   `softmax`) are kept, since they are what the code does;
2. the normalised token sequence is fingerprinted by winnowing (hashes of k-grams, the
   minimum of every window of w of them: Schleimer, Wilkerson & Aiken 2003, as in MOSS),
   each fingerprint tagged with its cell;
3. fingerprints of the released starter code are dropped, and so are fingerprints that
   more than `COMMON_FRACTION` of the class share (the reference solution that a third of
   the class wrote is no evidence of copying between two of them);
4. the score of a pair is the Jaccard index of their remaining fingerprint sets. Reordering
   helper functions, renaming variables or adding comments barely changes it.
"""

from __future__ import annotations

import ast
import hashlib
import io
import itertools
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

from nbformat import NotebookNode

K_GRAM = 6  # tokens per fingerprinted k-gram
WINDOW = 4  # winnowing window: any match of K_GRAM + WINDOW - 1 tokens is found
COMMON_FRACTION = 0.5  # a fingerprint shared by more of the class than this is common code
MIN_FINGERPRINTS = 6  # smaller answers (an untouched stub) are not compared
FLAG_SCORE = 0.6  # pairs at or above this are listed as "review"


@dataclass
class Pair:
    a: str
    b: str
    score: float
    shared: int  # fingerprints in common
    cells: dict[str, float] = field(default_factory=dict)  # per answer cell: its own Jaccard index

    @property
    def flagged(self) -> bool:
        return self.score >= FLAG_SCORE


class _Normaliser(ast.NodeTransformer):
    """Bound names -> one placeholder; constants -> their type; docstrings removed."""

    def __init__(self, bound: set[str]):
        self.bound = bound

    def _strip_docstring(self, node):
        body = getattr(node, "body", None)
        first = body[0] if body else None
        if (
            body
            and isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
        return node

    def generic_visit(self, node):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self._strip_docstring(node)
        return super().generic_visit(node)

    def visit_Name(self, node):
        if node.id in self.bound:
            return ast.copy_location(ast.Name(id="V", ctx=node.ctx), node)
        return node

    def visit_arg(self, node):
        node.arg = "V"
        node.annotation = None
        return node

    def visit_FunctionDef(self, node):
        self.generic_visit(node)
        node.name = "F"
        node.returns = None
        node.decorator_list = [self.visit(d) for d in node.decorator_list]
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Constant(self, node):
        value = node.value
        placeholder = {str: "S", bytes: "B", bool: value, type(None): None}.get(type(value), 0)
        return ast.copy_location(ast.Constant(value=placeholder), node)


def _bound_names(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            pass  # `import torch as t` keeps its meaning: `t` stays a name
    return names


def tokens(source: str) -> list[str]:
    """The normalised token sequence of one cell ([] when it does not parse: magics, syntax errors)."""
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    try:
        tree = ast.parse("\n".join(lines))
    except (SyntaxError, ValueError):
        return []
    tree = ast.fix_missing_locations(_Normaliser(_bound_names(tree)).visit(tree))
    text = ast.unparse(tree)
    out = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER):
                continue
            out.append(
                tok.string
                if tok.type not in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)
                else tokenize.tok_name[tok.type]
            )
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return []
    return out


def _hash(gram: tuple[str, ...]) -> int:
    return int.from_bytes(hashlib.blake2b("\x00".join(gram).encode(), digest_size=8).digest(), "big")


def fingerprints(source: str, k: int = K_GRAM, window: int = WINDOW) -> set[int]:
    """Winnowed k-gram hashes of one cell's normalised tokens."""
    toks = tokens(source)
    hashes = [_hash(tuple(toks[i : i + k])) for i in range(len(toks) - k + 1)]
    if len(hashes) <= window:
        return set(hashes)
    return {min(hashes[i : i + window]) for i in range(len(hashes) - window + 1)}


def answer_cells(nb: NotebookNode) -> dict[str, str]:
    """{grade_id: source} of the answer (solution) cells of an aligned or submitted notebook."""
    from autograder.model.notebooks import grade_id, is_solution_cell

    return {
        str(grade_id(c)): c.source for c in nb.cells if c.cell_type == "code" and is_solution_cell(c) and grade_id(c)
    }


def compare(
    answers: dict[str, dict[str, str]],
    starter: dict[str, str] | None = None,
    common_fraction: float = COMMON_FRACTION,
    min_fingerprints: int = MIN_FINGERPRINTS,
) -> list[Pair]:
    """Every pair of students, most similar first.

    `answers`: {student: {cell: source}}; `starter`: {cell: released source}, whose
    fingerprints are never evidence."""
    starter = starter or {}
    prints: dict[str, dict[str, set[int]]] = {}
    for student, cells in answers.items():
        prints[student] = {}
        for cell, source in cells.items():
            own = fingerprints(source) - fingerprints(starter.get(cell, ""))
            prints[student][cell] = own
    # Common code: fingerprints (per cell) that many students share.
    counts: dict[tuple[str, int], int] = {}
    for cell_prints in prints.values():
        for cell, fps in cell_prints.items():
            for fp in fps:
                counts[(cell, fp)] = counts.get((cell, fp), 0) + 1
    limit = max(2, common_fraction * len(prints))
    tagged: dict[str, dict[str, set[int]]] = {
        student: {cell: {fp for fp in fps if counts[(cell, fp)] <= limit} for cell, fps in cell_prints.items()}
        for student, cell_prints in prints.items()
    }
    pairs = []
    for a, b in itertools.combinations(sorted(tagged), 2):
        fa = {(c, fp) for c, fps in tagged[a].items() for fp in fps}
        fb = {(c, fp) for c, fps in tagged[b].items() for fp in fps}
        if len(fa) < min_fingerprints or len(fb) < min_fingerprints:
            continue
        shared = len(fa & fb)
        per_cell = {}
        for cell in sorted(set(tagged[a]) & set(tagged[b])):
            x, y = tagged[a][cell], tagged[b][cell]
            if x or y:
                per_cell[cell] = round(len(x & y) / len(x | y), 3)
        pairs.append(Pair(a, b, round(shared / len(fa | fb), 3), shared, per_cell))
    pairs.sort(key=lambda p: (-p.score, p.a, p.b))
    return pairs


def class_answers(workdir: Path, notebook: str) -> dict[str, dict[str, str]]:
    """{student: {cell: source}} from the executed notebooks in the work dir (students whose
    notebook could not run have none and are left out)."""
    from autograder import config
    from autograder.model.notebooks import read

    out = {}
    for path in sorted((Path(workdir) / config.EXECUTED_DIR).glob(f"*/{notebook}.ipynb")):
        try:
            out[path.parent.name] = answer_cells(read(path))
        except Exception:  # noqa: BLE001 - an unreadable record is skipped, not fatal
            continue
    return out


def starter_code(notebook: str, solutions_dir: Path | None = None) -> dict[str, str]:
    from autograder.model.notebooks import read, release_notebook, source_notebook

    return answer_cells(release_notebook(read(source_notebook(notebook, solutions_dir))))


# --- answers that repeat the course's own code -------------------------------------------------

COURSE_FLAG = 0.85  # share of a course piece's distinctive fingerprints in one answer cell that is listed for review


@dataclass(frozen=True)
class CoursePiece:
    """A function or class the course publishes (a module of course/, a lesson's code)."""

    label: str  # e.g. "course/provided.py: Encoder"
    prints: frozenset[int]


@dataclass(frozen=True)
class CourseMatch:
    cell: str  # grade_id of the answer cell
    piece: str  # CoursePiece.label
    share: float  # of the piece's fingerprints, found in the answer


def course_pieces(root: Path | None = None) -> list[CoursePiece]:
    """Every function and class of course/*.py and of the lessons' code (chapters/*.md): what the course
    publishes at some point of the term, answers included once their deadline has passed."""
    from autograder import config
    from autograder.model.notebooks import myst_code

    root = Path(root or config.REPO_ROOT)
    sources = [
        (p.relative_to(root).as_posix(), p.read_text(encoding="utf-8")) for p in sorted((root / "course").glob("*.py"))
    ]
    sources += [
        (p.relative_to(root).as_posix(), myst_code(p.read_text(encoding="utf-8"), p.parent))
        for p in sorted((root / "chapters").glob("*.md"))
    ]
    pieces = []
    for label, code in sources:
        try:
            tree = ast.parse(code)
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                prints = fingerprints(ast.get_source_segment(code, node) or "")
                if len(prints) >= MIN_FINGERPRINTS:
                    pieces.append(CoursePiece(f"{label}: {node.name}", frozenset(prints)))
    return pieces


def course_matches(
    answers: dict[str, str], pieces: list[CoursePiece], starter: dict[str, str] | None = None, flag: float = COURSE_FLAG
) -> list[CourseMatch]:
    """The course pieces that one student's answer cells ({cell: source}) repeat, most complete first.

    A piece matches a cell when at least `flag` of its fingerprints are among the cell's own (the released
    starter code's removed from both): renaming, reordering and comments do not hide it. A reason to read the answer,
    never a verdict: a piece that implements the same contract can share some lines with an honest answer.
    """
    starter = starter or {}
    found = []
    for cell, source in answers.items():
        given = fingerprints(starter.get(cell, ""))
        own = fingerprints(source) - given
        if len(own) < MIN_FINGERPRINTS:
            continue
        for piece in pieces:
            distinctive = piece.prints - given  # what the stub already holds (a class line, a signature) proves nothing
            if len(distinctive) < MIN_FINGERPRINTS:
                continue
            share = len(own & distinctive) / len(distinctive)
            if share >= flag:
                found.append(CourseMatch(cell, piece.label, round(share, 3)))
    found.sort(key=lambda m: (-m.share, m.cell, m.piece))
    return found


def describe(matches: list[CourseMatch]) -> str:
    """The export's `copied_from` cell: 'cell: piece (share)' for each match, the best per cell first."""
    return " | ".join(f"{m.cell}: {m.piece} ({m.share:.2f})" for m in matches)
