"""Which of the course's own code (`course/*.py`) answers which exercise, and that code as students
may see it at a moment of the term.

A function or class of a course module *answers* chapter NN's exercise when its name is one the
exercise asks for (`builds` in chapters.yml), or when it uses such a definition, directly or
through others (the course's `Transformer` uses its `Encoder`: it answers chapter 07 too). Such a
definition is published only once every exercise it answers is past its deadline; until then the
public module holds a one-line comment in its place. Lessons and provided cells that need it make
their chapter wait for the same deadlines (`needs`).

The modules are read with `ast`, never imported.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

from autograder.errors import UsageError
from coursetools import layout
from coursetools.manifest import Manifest

_DEFINITION = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


class CourseCodeError(UsageError, ValueError):
    """A course module cannot be published at this moment as it stands (the message says why)."""


@dataclass(frozen=True)
class Definition:
    module: str  # "provided" for course/provided.py
    name: str
    first_line: int  # 1-based, decorators included
    last_line: int
    uses: frozenset[str]  # every name its body reads


@dataclass
class Module:
    name: str
    path: Path
    text: str
    definitions: dict[str, Definition] = field(default_factory=dict)
    imported: dict[str, tuple[str, str]] = field(default_factory=dict)  # local name -> (course module, name)
    top_level_uses: set[str] = field(default_factory=set)  # names read by statements other than definitions


def course_imports(code: str) -> dict[str, tuple[str, str]]:
    """`from course.M import a, b as c` in `code` -> {local name: (M, name)}; code that does not parse: {}."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        tree = None
    found: dict[str, tuple[str, str]] = {}
    if tree is None:  # lesson cells may hold IPython magics: read the import lines alone
        for match in re.finditer(
            r"^[ \t]*from[ \t]+course\.(\w+)[ \t]+import[ \t]+(\([^)]*\)|[^\n#]*)", code, re.MULTILINE
        ):
            for item in match.group(2).strip("()").replace("\n", " ").split(","):
                parts = item.split()
                if parts:
                    found[parts[-1]] = (match.group(1), parts[0])
        return found
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("course."):
            module = node.module.split(".", 1)[1]
            for alias in node.names:
                found[alias.asname or alias.name] = (module, alias.name)
    return found


def _read_module(path: Path) -> Module:
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text, filename=str(path))
    module = Module(path.stem, path, text, imported=course_imports(text))
    for node in tree.body:
        if isinstance(node, _DEFINITION):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            uses = frozenset(n.id for n in ast.walk(node) if isinstance(n, ast.Name))
            module.definitions[node.name] = Definition(
                path.stem, node.name, first, node.end_lineno or node.lineno, uses
            )
        else:
            module.top_level_uses |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    return module


class CourseCode:
    """Every course module, and for each definition the exercises it answers."""

    def __init__(self, manifest: Manifest, course_dir: Path | None = None):
        self.dir = Path(course_dir or layout.COURSE_DIR)
        self.modules = {p.stem: _read_module(p) for p in sorted(self.dir.glob("*.py"))}
        asked = manifest.answered_by()
        self.answers: dict[tuple[str, str], frozenset[str]] = {
            (m.name, d.name): asked.get(d.name, frozenset())
            for m in self.modules.values()
            for d in m.definitions.values()
        }
        changed = True
        while changed:  # spread along the uses until nothing changes (uses may be circular)
            changed = False
            for key, numbers in list(self.answers.items()):
                module = self.modules[key[0]]
                grown = set(numbers)
                for used in module.definitions[key[1]].uses:
                    grown |= self.gate(key[0], used)
                if grown != numbers:
                    self.answers[key] = frozenset(grown)
                    changed = True

    def gate(self, module: str, name: str) -> frozenset[str]:
        """The exercises whose deadlines `name`, as seen from `module`, waits for (empty: none)."""
        if (module, name) in self.answers:
            return self.answers[(module, name)]
        source = self.modules[module].imported.get(name) if module in self.modules else None
        if source is not None and source[0] in self.modules:
            return self.answers.get(source, frozenset())
        return frozenset()

    def needs(self, code: str) -> dict[str, frozenset[str]]:
        """What code that imports from `course.*` (a lesson's cells) waits for: {imported name: exercises}."""
        found = {}
        for local, (module, name) in course_imports(code).items():
            gate = self.gate(module, name)
            if gate:
                found[local] = gate
        return found

    def provided_needs(self, names: list[str]) -> dict[str, frozenset[str]]:
        """What a provided cell naming `names` (definitions of course/provided.py) waits for."""
        return {name: self.gate("provided", name) for name in names if self.gate("provided", name)}

    def published_text(self, module: str, past_due: frozenset[str]) -> str:
        """The module as students may see it once the exercises in `past_due` are past their deadline:
        every definition that answers another exercise is replaced by a comment."""
        source = self.modules[module]
        lines = source.text.splitlines(keepends=True)
        held = sorted(
            (d for d in source.definitions.values() if not self.answers[(module, d.name)] <= past_due),
            key=lambda d: d.first_line,
            reverse=True,
        )
        for definition in held:
            waits = ", ".join(sorted(self.answers[(module, definition.name)] - past_due))
            note = f"# `{definition.name}` is published after the deadline of exercise {waits}.\n"
            lines[definition.first_line - 1 : definition.last_line] = [note]
        missing = {d.name for d in held} & source.top_level_uses
        if missing:
            raise CourseCodeError(
                f"course/{module}.py: module-level code uses {sorted(missing)}, which answer an open "
                "exercise: move that code into a function, or out of the module"
            )
        return "".join(lines)
