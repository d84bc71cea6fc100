"""Build the website: `jupyter-book build` with the lessons executed in parallel.

    python tools/build_book.py [PATH] [jupyter-book build options...]     # make book; tests/book_build.py

Jupyter Book 1's command line reads (and so executes) the pages one after the other, although Sphinx can
read them in parallel processes and myst-nb, which executes the lessons, declares itself safe for that.
The lessons take most of a cold build (chapter 09 trains a model for a minute), so on two cores a
parallel read nearly halves it. This runs Jupyter Book's own `build` command, unchanged but for the
number of Sphinx processes (`BOOK_JOBS`, default: twice the number of cores, at most 8), which its `build_sphinx`
function accepts and its command line does not pass.

Sphinx hands each process a chunk of consecutive pages (alphabetical), and one lesson (09) takes a third of
the time: with as many processes as cores, 09 and 10 share a chunk that finishes long after the others. Twice
as many processes as cores make the chunks small enough to even out (the kernels wait on each other's CPU
rather than on a long chunk).
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path


def jobs() -> int:
    """Sphinx processes: BOOK_JOBS, else two per core (each runs a kernel in its turn), at most 8."""
    if os.environ.get("BOOK_JOBS"):
        return max(1, int(os.environ["BOOK_JOBS"]))
    return max(1, min(8, 2 * (os.cpu_count() or 1)))


def cache_dir(argv: list[str]) -> Path:
    """Where Jupyter Book keeps the lessons' execution cache: `_build/.jupyter_cache` under --path-output, or
    else under the book's folder (the first argument that is not an option)."""
    if "--path-output" in argv[:-1]:
        return Path(argv[argv.index("--path-output") + 1]) / "_build" / ".jupyter_cache"
    book = next((arg for arg in argv if not arg.startswith("-")), ".")
    return Path(book) / "_build" / ".jupyter_cache"


def prepare_cache(path: Path) -> None:
    """Create the execution cache's database before the parallel read. On a fresh clone every Sphinx process
    would otherwise create it at once, and all but one fail on sqlite's `table settings already exists`."""
    from jupyter_cache import get_cache

    get_cache(str(path)).list_cache_records()  # the first query creates the tables


BOOK_SITE = Path(__file__).resolve().with_name("book_site")  # its sitecustomize skips a slow optional import


def use_book_site() -> None:
    """Every process of the build, lesson kernels included, starts with tools/book_site/sitecustomize.py
    (this one too: it is already running, so it applies the same setting itself)."""
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(BOOK_SITE), os.environ.get("PYTHONPATH", "")]))
    sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]


def main(argv: list[str]) -> int:
    use_book_site()
    from jupyter_book import sphinx

    prepare_cache(cache_dir(argv))
    from jupyter_book.cli import main as cli

    # `build` imports build_sphinx from jupyter_book.sphinx when it runs: give it the number of processes
    sphinx.build_sphinx = functools.partial(sphinx.build_sphinx, jobs=jobs())
    try:
        cli.main(["build", *argv], standalone_mode=False)
    except SystemExit as exc:  # jupyter-book exits with the build's status
        return int(exc.code or 0)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
