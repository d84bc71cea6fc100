"""What must never reach students, and where to look for it.

The secret lines are the lines of every solution region (`### BEGIN SOLUTION` ... `### END SOLUTION`)
and of every hidden test (`### BEGIN HIDDEN TESTS` ... `### END HIDDEN TESTS`, in test cells and in the
judge-helpers cell) of every notebook in `solutions/`. A line counts (the policy for trivial lines):

- compared stripped, with runs of whitespace made one space (so re-indented or re-aligned copies count);
- only if it has at least `MIN_LENGTH` characters (`else:`, `return x`, `)` mean nothing);
- only if no released student notebook shows it, as a line or inside one (a hidden test repeating a
  visible set-up line, a provided cell's line, a solution line that the stub's docstring spells out:
  all public anyway);
- and not if it is one of `GENERIC_LINES`: control-flow or set-up lines that carry no part of an answer,
  each listed with the reason it is harmless. A line that computes something is never generic: when a
  lesson repeats one, the lesson is reworded instead.

A file is searched as it is, and also as a reader sees it: HTML without its tags and entities (code is
split into one span per token), notebooks and JSON as the strings they hold (quotes and newlines are
escaped in the raw file).
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

from autograder import config
from autograder.model.notebooks import (
    has_hidden_tests,
    hidden_test_lines,
    is_solution_cell,
    read,
    release_notebook,
    solution_paths,
    solution_region_lines,
)
from coursetools.release import MIN_SHARED_LINE, normalised

MIN_LENGTH = MIN_SHARED_LINE  # 12, as `release` uses for provided code
GENERIC_LINES = {
    "if mask is not None:": "the branch that the stub's own signature `mask=None` asks for; every masked function "
    "has it",
    "with torch.no_grad():": "PyTorch boilerplate for setting weights by hand, as any lesson that copies weights does",
    "g = torch.Generator().manual_seed(seed)": "a seeded random generator: test set-up that checks nothing",
    "outputs = []": "an empty list that a probe fills with what the student's code returned (a lesson collects "
    "outputs in one too): it checks nothing and answers nothing",
    "results = []": "the same for a probe's results (Sphinx's own search script starts one too)",
}


def secret_lines(solutions_dir: Path | None = None) -> dict[str, str]:
    """{normalised line: 'notebook (solution|hidden test)'} of every line that must stay private."""
    paths = solution_paths(solutions_dir or config.SOLUTIONS_DIR)
    sources = {path.stem: read(path) for path in paths}
    visible = "\n".join(
        normalised(line)
        for nb in sources.values()
        for cell in release_notebook(nb).cells
        for line in cell.source.splitlines()
    )
    secret: dict[str, str] = {}
    for name, nb in sources.items():
        for cell in nb.cells:
            lines = []
            if is_solution_cell(cell):
                lines += [(line, "solution") for line in solution_region_lines(cell)]
            if has_hidden_tests(cell):  # a test cell, or the judge-helpers cell
                lines += [(line, "hidden test") for line in hidden_test_lines(cell)]
            for line, kind in lines:
                key = normalised(line)
                if len(key) >= MIN_LENGTH and key not in visible and key not in GENERIC_LINES:
                    secret.setdefault(key, f"{name} ({kind})")
    return secret


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        if all(isinstance(v, str) for v in value):  # a notebook's multi-line source or text
            return ["".join(value)] + [s for v in value for s in _strings(v)]
        return [s for v in value for s in _strings(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    return []


def readable_texts(path: Path) -> list[str] | None:
    """A file's text as stored and as read (normalised); None for a binary file."""
    data = path.read_bytes()
    if b"\0" in data[:8192]:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    texts = [text]
    if path.suffix in (".html", ".htm", ".xml", ".svg"):
        texts.append(html.unescape(re.sub(r"<[^>]*>", "", text)))
    if path.suffix in (".ipynb", ".json"):
        try:
            texts.append("\n".join(_strings(json.loads(text))))
        except json.JSONDecodeError:
            pass
    return [normalised(t) for t in texts]


def find_leaks(root: Path, secret: dict[str, str]) -> list[str]:
    """'file: line (origin)' for every secret line found in any file under root."""
    found = []
    for path in sorted(root.rglob("*")):
        if not path.is_file() or ".git" in path.relative_to(root).parts:
            continue
        texts = readable_texts(path)
        if texts is None:
            continue
        for line, origin in secret.items():
            if any(line in text for text in texts):
                found.append(f"{path.relative_to(root)}: {line!r} ({origin})")
    return found
