"""Local Sphinx extension: a lesson whose execution lost an output fails the build, is never cached, and is
executed again by the next build.

Loaded by ``_config.yml`` (``sphinx.local_extensions``); the public release ships it with ``_ext/``.

What happened (issue 40): on a loaded machine chapter 01's hidden glue cell kept 17 of its outputs, the page's
later ``{glue:text}`` roles found no key ("No key 'rnn_table' found in glue data"), the build failed with those
warnings, and yet jupyter-cache had stored the run as a success: the next ``make book`` reused it, Sphinx did not
read the unchanged page again (so it repeated no warning), and the build exited 0 with empty sentences and no
table. Three things make that impossible:

1. **Late output is an error, not a shrug.** nbclient waits ``iopub_timeout`` seconds (4 by default) after a
   cell's reply for the outputs still in flight, and then, unless ``raise_on_iopub_timeout`` is set, logs a
   warning and goes on without them: the cell's outputs are cut short and the notebook counts as executed. A busy
   build process reads its kernel's messages late, so here the wait is longer (``IOPUB_TIMEOUT``) and running out
   of it raises: the execution fails, myst-nb reports it, and jupyter-cache stores nothing.
2. **Every glue key a page names must be in its outputs.** After a page is read, the keys its source names
   (``{glue}``, ``{glue:text}``, ``{glue:md}``, ... roles and ``glue`` directives) are compared with the keys its
   execution produced; a missing one is a warning naming them (so ``-W`` fails the build), and the page's cached
   execution is removed, whatever hid the output.
3. **A failed page is read again.** Pages that failed so (or whose execution failed) are listed in the doctree
   folder; the next build reads them again (``env-get-outdated``) and, their cache gone, executes them.

tests/test_book_tools.py forces both failures (a glue output dropped, an output delayed past the wait) on a small
book built with ``tools/build_book.py`` and this extension, as both repositories build theirs.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.util import logging

__version__ = "1.0"

logger = logging.getLogger(__name__)

# Seconds nbclient waits, after a cell's reply, for the outputs the kernel sent before it (see 1.). Generous: the
# wait ends as soon as the kernel reports it is idle, so only a lost message ever costs the whole of it.
IOPUB_TIMEOUT = int(os.environ.get("BOOK_IOPUB_TIMEOUT", "120"))

# The file, in the doctree folder, of pages the next build must read (and so execute) again (see 3.).
REREAD = "pages_to_reread.txt"

# `{glue}`key``, `{glue:text}`key:.2f``, `{glue:md}`key`` ... (a key in another document, `path::key`, is not
# this page's) and the `glue:figure` / `glue:math` directives, in backtick or colon fences.
GLUE_ROLE = re.compile(r"\{glue(?::[a-z]*)?\}`([^`]+)`")
GLUE_DIRECTIVE = re.compile(r"^[ \t]*(?:`{3,}|:{3,})\{glue(?::[a-z]+)?\}[ \t]+(\S+)", re.MULTILINE)


def glue_keys_named(source: str) -> set[str]:
    """The glue keys a page's MyST source names for itself."""
    keys = set()
    for match in GLUE_ROLE.finditer(source):
        text = match.group(1)
        if "::" in text:
            continue
        keys.add(text.split(":", 1)[0].strip())
    keys.update(match.group(1) for match in GLUE_DIRECTIVE.finditer(source))
    return keys


def fail_late_output() -> None:
    """1.: nbclient's defaults, for every notebook client of this build (jupyter-cache passes no value)."""
    try:
        from nbclient import NotebookClient
    except ImportError:
        return
    original = NotebookClient.__init__
    if getattr(original, "fails_late_output", False):
        return

    # Not the traits' default_value: traitlets copies the defaults of immutable traits into the class once.
    @functools.wraps(original)
    def __init__(self: NotebookClient, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("iopub_timeout", IOPUB_TIMEOUT)
        kwargs.setdefault("raise_on_iopub_timeout", True)
        original(self, *args, **kwargs)

    __init__.fails_late_output = True  # type: ignore[attr-defined]
    NotebookClient.__init__ = __init__  # type: ignore[method-assign]


def forget_cached_execution(app: Sphinx, source: Path) -> None:
    """Remove every cached execution of the notebook at `source`, so that the next build runs it again."""
    cache_path = app.config.nb_execution_cache_path or str(Path(app.outdir).parent / ".jupyter_cache")
    if not Path(cache_path).is_dir():
        return
    from jupyter_cache import get_cache

    cache = get_cache(cache_path)
    for record in cache.list_cache_records():
        if Path(record.uri).resolve() == source.resolve():
            try:
                cache.remove_cache(record.pk)
            except KeyError:  # its files were already gone
                pass


def note_reread(app: Sphinx, docname: str) -> None:
    """3.: one line per page; appended, so that pages read in parallel processes do not overwrite each other."""
    with open(Path(app.doctreedir) / REREAD, "a", encoding="utf-8") as listing:
        listing.write(docname + "\n")


def check_page(app: Sphinx, doctree: nodes.document) -> None:
    """2.: after a page is read, in the process that read (and executed) it."""
    env = app.env
    docname = env.docname
    source = Path(env.doc2path(docname))
    if source.suffix != ".md" or "nb_metadata" not in vars(env):
        return
    data = env.nb_metadata.get(docname, {})  # type: ignore[attr-defined]
    execution = data.get("exec_data")
    if execution is None:  # not executed: not a lesson
        return
    problems = []
    if not execution.get("succeeded", True):
        problems.append(f"its execution failed ({execution.get('error')})")
    missing = sorted(glue_keys_named(source.read_text(encoding="utf-8")) - set(data.get("glue", [])))
    if missing:
        problems.append(f"{len(missing)} glue key(s) it names are not in its outputs: {', '.join(missing)}")
    if not problems:
        return
    forget_cached_execution(app, source)
    note_reread(app, docname)
    logger.warning(
        "[lost_outputs] %s: %s; its cached execution is removed and the next build executes it again",
        docname,
        "; ".join(problems),
        location=docname,
    )


def reread_failed(
    app: Sphinx, env: BuildEnvironment, added: set[str], changed: set[str], removed: set[str]
) -> list[str]:
    """3.: the pages an earlier build listed, read again by this one."""
    listing = Path(app.doctreedir) / REREAD
    if not listing.is_file():
        return []
    names = {line.strip() for line in listing.read_text(encoding="utf-8").splitlines() if line.strip()}
    listing.unlink()
    return sorted(name for name in names if name in env.found_docs)


def setup(app: Sphinx) -> dict[str, Any]:
    fail_late_output()
    app.connect("doctree-read", check_page)
    app.connect("env-get-outdated", reread_failed)
    return {"version": __version__, "parallel_read_safe": True, "parallel_write_safe": True}
