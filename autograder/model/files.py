"""Two facts the grader and the course's tooling both read from files: a file's sha256, and the version pins of
pyproject.toml that a requirements.txt written elsewhere (Gradescope's zip, the public release) must repeat.

Written once here, at the bottom of the package, so that `intake`, `grading`, the Gradescope zip and
`coursetools.publish` agree on both.
"""

from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path

from autograder import config
from autograder.errors import InputError


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file's bytes, read in blocks (a submission can be large; an archive larger)."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def pinned_requirements(names: tuple[str, ...], written_by: str, root: Path = config.REPO_ROOT) -> str:
    """A requirements.txt of `names`, each with the pin pyproject.toml's dependencies give it, so that what runs
    elsewhere installs what this repository is tested with. `written_by` names the command, for its first line."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # Python 3.10: the copy pip carries
        from pip._vendor import tomli as tomllib
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    pins = {re.split(r"[^A-Za-z0-9_.-]", spec, maxsplit=1)[0].lower(): spec for spec in project["dependencies"]}
    missing = [name for name in names if name not in pins]
    if missing:
        raise InputError(f"pyproject.toml has no dependency {', '.join(missing)}")
    head = f"# Written by `{written_by}` from the course repository's pyproject.toml."
    return "\n".join([head] + [pins[name] for name in names]) + "\n"
