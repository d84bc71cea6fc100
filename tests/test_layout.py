"""The layout docs/maintainers.md's "Layout" section describes, enforced: who may import whom.

Read from the code with `ast` (every `import` and `from ... import`, at any depth, lazy ones included):

- `autograder` is the grader, in layers that import only downwards:
  config and errors < model (records, notebook formats, files) < intake, sandbox, store (the gradebook)
  < grading < reporting < integrations (platforms that run the grader themselves: Gradescope) < cli;
  the ranks are LAYERS below. The grader never imports the course's tooling (`coursetools`) or the
  course's code (`course`): only the CLI, the thin top, reaches coursetools for `release` and `publish`.
  In integrations, Gradescope's zip (`package`) and its run in the container (`container`) share only `settings`.
- `autograder/runner/` is a program that runs inside the sandbox: it imports only the standard library,
  the notebook's packages and its own sibling modules (never `autograder`), and the grader imports only
  its `protocol` and `plain` modules (the messages and the probe's data) and `isolation` (the wait for a
  submission's keys): GRADER_FROM_RUNNER.
- `autograder/judge/` is a program too (the clean interpreter that decides hidden tests): the standard
  library, torch, numpy and the runner's `protocol` and `plain`.
- `coursetools` (release, publish, samples, the manifest, course code) depends on the grader's bottom
  only: `autograder.config`, `autograder.errors` and `autograder.model`.
- No import cycle between modules.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from book_build import ROOT

LAYERS = {  # package -> its rank; a module may import its own package and lower ranks
    "autograder": 0,  # the package's docstring
    "autograder.config": 0,
    "autograder.errors": 0,  # UsageError and its kinds: imports nothing
    "autograder.interrupt": 0,  # the remembered Ctrl-C: the standard library only
    "autograder.model": 1,
    "autograder.runner": 2,  # only its protocol, see below
    "autograder.intake": 2,
    "autograder.sandbox": 2,
    "autograder.judge": 2,  # a program like the runner, see below
    "autograder.store": 2,
    "autograder.grading": 3,
    "autograder.reporting": 4,
    "autograder.integrations": 5,
    "autograder.cli": 6,
    "autograder.__main__": 7,
}
STDLIB = set(sys.stdlib_module_names)
RUNNER_SHARED = ("autograder.runner.protocol", "autograder.runner.plain")  # the messages and the probe's data
# The grader's sandbox also waits, between two submissions, for the kernel to free the keys of the first
# (runner.isolation's keys_of, wait_for_keys: standard library only, as all of the runner).
GRADER_FROM_RUNNER = (*RUNNER_SHARED, "autograder.runner.isolation")
JUDGE_MAY_IMPORT = STDLIB | {"torch", "numpy", *RUNNER_SHARED}
RUNNER_MAY_IMPORT = STDLIB | {"torch", "numpy", "matplotlib", "matplotlib_inline", "IPython", "traitlets", "runner"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imports_of(path: Path) -> set[str]:
    """Every module `path` imports (absolute names; `from x import y` gives x.y when x.y is a module of ours)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            found.add("." * node.level + (node.module or ""))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = {
                f"{node.module}.{a.name}" for a in node.names if module_path(f"{node.module}.{a.name}") is not None
            }
            found |= modules
            if len(modules) < len(node.names):  # names defined in node.module itself
                found.add(node.module)
    return found


def module_path(name: str) -> Path | None:
    base = ROOT.joinpath(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def layer(name: str) -> str | None:
    for prefix in sorted(LAYERS, key=len, reverse=True):
        if name == prefix or (prefix != "autograder" and name.startswith(prefix + ".")):
            return prefix
    return None


GRADER = sorted(
    p for p in (ROOT / "autograder").rglob("*.py") if "runner" not in p.relative_to(ROOT / "autograder").parts
)
RUNNER = sorted((ROOT / "autograder" / "runner").glob("*.py"))
TOOLS = sorted((ROOT / "coursetools").glob("*.py"))


@pytest.mark.parametrize("path", GRADER, ids=lambda p: module_name(p))
def test_the_grader_imports_downwards_only(path):
    name = module_name(path)
    own = layer(name)
    assert own is not None, f"{name} belongs to no layer of docs/maintainers.md's layout: add it to LAYERS"
    for imported in imports_of(path):
        top = imported.split(".")[0]
        if top in ("coursetools", "course"):
            assert name == "autograder.cli" and top == "coursetools", (
                f"{name} imports {imported}: the grader depends on no course tooling"
            )
            continue
        if top != "autograder" or imported == "autograder":
            continue
        target = layer(imported)
        if target == "autograder.runner":
            assert imported in GRADER_FROM_RUNNER, (
                f"{name} imports {imported}: only the runner's {GRADER_FROM_RUNNER} are shared"
            )
            continue
        assert target is not None, f"{name} imports {imported}, which belongs to no layer"
        assert target == own or LAYERS[target] < LAYERS[own], f"{name} ({own}) imports {imported} ({target}): upwards"


@pytest.mark.parametrize("path", RUNNER, ids=lambda p: p.name)
def test_the_runner_is_a_program_of_its_own(path):
    for imported in imports_of(path):
        if imported.startswith("."):
            continue  # its own modules
        top = imported.split(".")[0]
        assert top in RUNNER_MAY_IMPORT, (
            f"runner/{path.name} imports {imported}: it runs in the sandbox, with no grader code"
        )


@pytest.mark.parametrize("path", sorted((ROOT / "autograder" / "judge").glob("*.py")), ids=lambda p: p.name)
def test_the_judge_is_a_program_of_its_own(path):
    """The judge decides verdicts from plain data: it imports no grader code that could reach a student's."""
    for imported in imports_of(path):
        assert imported in JUDGE_MAY_IMPORT or imported.split(".")[0] in JUDGE_MAY_IMPORT, (
            f"judge/{path.name} imports {imported}"
        )


@pytest.mark.parametrize("path", TOOLS, ids=lambda p: p.name)
def test_course_tooling_uses_only_the_graders_bottom(path):
    for imported in imports_of(path):
        if imported.split(".")[0] == "autograder" and imported != "autograder":
            assert layer(imported) in ("autograder.config", "autograder.errors", "autograder.model"), (
                f"coursetools/{path.name} imports {imported}"
            )


def test_gradescope_zip_and_container_meet_only_in_their_settings():
    """The zip is built on the instructor's machine, run_autograder runs in Gradescope's container: two sides of
    one contract, gradescope.json, so neither imports the other; both import the record they share."""
    sides = {"package": "container", "container": "package"}
    for side, other in sides.items():
        found = imports_of(ROOT / "autograder" / "integrations" / "gradescope" / f"{side}.py")
        assert f"autograder.integrations.gradescope.{other}" not in found, f"gradescope.{side} imports its {other}"
        assert "autograder.integrations.gradescope.settings" in found, f"gradescope.{side} has its own settings"


def test_no_import_cycle():
    modules = {module_name(p): p for p in [*GRADER, *TOOLS]}
    edges = {name: {i for i in imports_of(path) if i in modules and i != name} for name, path in modules.items()}
    for name in list(edges):  # a package's __init__ re-exporting its modules is not a cycle
        if modules[name].name == "__init__.py":
            edges[name] = {i for i in edges[name] if not i.startswith(name + ".")}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt) :] + [nxt]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node)


def test_the_layout_section_of_the_maintainers_page_names_every_package():
    readme = (ROOT / "docs" / "maintainers.md").read_text(encoding="utf-8")
    tree = readme.split("The code, and what each package may import", 1)[1].split("```text", 1)[1].split("```", 1)[0]
    packages = {module_name(p.parent) for p in (ROOT / "autograder").rglob("__init__.py")} | {"coursetools", "course"}
    for package in sorted(packages):
        assert f" {package.rsplit('.', 1)[-1]}/ " in f" {' '.join(tree.split())} ", (
            f"docs/maintainers.md's layout tree does not describe {package}"
        )


def test_every_package_is_installed():
    """setuptools finds the packages a wheel installs from pyproject's include patterns: a new sub-package that the
    patterns miss works in the editable install of `make test` and is missing from a regular `pip install .`."""
    import tomllib
    from setuptools import find_packages

    include = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]["include"]
    installed = set(find_packages(where=str(ROOT), include=include))
    found = {
        ".".join(init.parent.relative_to(ROOT).parts)
        for top in ("autograder", "coursetools", "course")
        for init in (ROOT / top).rglob("__init__.py")
        if "__pycache__" not in init.parts
    }
    assert found - installed == set(), "widen [tool.setuptools.packages.find] include in pyproject.toml"
    assert {name.split(".")[0] for name in installed} == {"autograder", "coursetools", "course"}, (
        "the wheel installs only the grader, the course's tooling and the course's code"
    )
