"""A lesson whose execution lost an output fails the build, is never cached, and runs again next build
(_ext/lost_outputs.py; issue 40: chapter 01 kept 17 of its glue outputs on a loaded machine, the build failed,
and the next `make book` reused the cached run and exited 0 with empty sentences).

Each test builds a one-page book twice with tools/build_book.py and `-W -n --keep-going`, as `make book` does here
and in the public release (which ships this `_ext/` and `tools/build_book.py` unchanged: tests/test_publish.py):
the first build with a fault forced inside the build process (nbclient drops the page's glue output, or receives
it later than it waits), the second without. Before the extension the first build left its run in the cache and
the second exited 0 with the glued value missing from the page.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from book_build import ROOT

PAGE = """\
---
jupytext:
  text_representation:
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---

# One page

```{code-cell} ipython3
from myst_nb import glue

glue("answer", 6 * 7, display=False)
```

```{code-cell} ipython3
# the cell the fault aims at
glue("fragile", "a sentence computed at build time", display=False)
```

The answer is {glue:text}`answer` and the page says {glue:text}`fragile`.
"""

CONFIG = """\
title: Lost outputs
execute:
  execute_notebooks: cache
  timeout: 120
sphinx:
  local_extensions:
    lost_outputs: _ext
"""

# Run inside the build process before tools/build_book.py: the fault named by LOST_OUTPUT_FAULT, on the cell that
# glues "fragile" only. "drop": nbclient discards that output as it arrives (the kernel sent it; the page never
# gets it). "delay": nbclient starts reading that cell's outputs 6 s late, past the reply (nbclient's default wait
# is 4 s, the extension's is set to 2 s here through BOOK_IOPUB_TIMEOUT).
FAULT = """\
import asyncio, os, runpy, sys
from nbclient import NotebookClient

fault = os.environ.get("LOST_OUTPUT_FAULT")
output, poll = NotebookClient.output, NotebookClient._async_poll_output_msg

def dropping_output(self, outs, msg, display_id, cell_index):
    name = msg.get("content", {}).get("metadata", {}).get("scrapbook", {}).get("name")
    return None if name == "fragile" else output(self, outs, msg, display_id, cell_index)

async def late_poll(self, parent_msg_id, cell, cell_index):
    if "fragile" in cell.source:
        await asyncio.sleep(6)
    return await poll(self, parent_msg_id, cell, cell_index)

if fault == "drop":
    NotebookClient.output = dropping_output
elif fault == "delay":
    NotebookClient._async_poll_output_msg = late_poll
sys.argv = [sys.argv[1], *sys.argv[2:]]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


@pytest.fixture
def book(tmp_path: Path) -> Path:
    folder = tmp_path / "book"
    folder.mkdir()
    (folder / "_config.yml").write_text(CONFIG, encoding="utf-8")
    (folder / "_toc.yml").write_text("format: jb-book\nroot: page\n", encoding="utf-8")
    (folder / "page.md").write_text(PAGE, encoding="utf-8")
    shutil.copytree(ROOT / "_ext", folder / "_ext", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "fault.py").write_text(FAULT, encoding="utf-8")
    return folder


def build(book: Path, fault: str | None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "BOOK_IOPUB_TIMEOUT": "2", "BOOK_JOBS": "1", "PYTHONHASHSEED": "0"}
    env.pop("LOST_OUTPUT_FAULT", None)
    if fault:
        env["LOST_OUTPUT_FAULT"] = fault
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    command = [sys.executable, str(book.parent / "fault.py"), str(ROOT / "tools" / "build_book.py"), "."]
    return subprocess.run(
        [*command, "-W", "-n", "--keep-going"], cwd=book, env=env, capture_output=True, text=True, timeout=600
    )


def cached_pages(book: Path) -> list[str]:
    from jupyter_cache import get_cache

    cache = book / "_build" / ".jupyter_cache"
    return [Path(record.uri).name for record in get_cache(str(cache)).list_cache_records()] if cache.is_dir() else []


def page_text(book: Path) -> str:
    return (book / "_build" / "html" / "page.html").read_text(encoding="utf-8")


@pytest.mark.parametrize("fault", ["drop", "delay"])
def test_a_page_that_lost_an_output_fails_is_not_cached_and_runs_again(book, fault):
    first = build(book, fault)
    log = first.stdout + first.stderr
    assert first.returncode != 0, f"the build with the output {fault}ped passed:\n{log[-3000:]}"
    assert "page.md" not in cached_pages(book), f"the run that lost an output was cached:\n{log[-3000:]}"
    if fault == "drop":
        assert "[lost_outputs] page: 1 glue key(s) it names are not in its outputs: fragile" in log
    else:
        assert "Executing notebook failed: CellTimeoutError" in log

    second = build(book, None)
    log = second.stdout + second.stderr
    assert second.returncode == 0, log[-3000:]
    assert "Executing notebook" in log, "the second build did not execute the page again"
    text = page_text(book)
    assert "a sentence computed at build time" in text and "42" in text
    assert cached_pages(book) == ["page.md"]


def test_the_check_finds_the_keys_a_page_names():
    sys.path.insert(0, str(ROOT / "_ext"))
    try:
        import lost_outputs
    finally:
        sys.path.remove(str(ROOT / "_ext"))
    source = textwrap.dedent(
        """\
        {glue:text}`loss:.3f` and {glue}`figure_key`, {glue:md}`table` {glue:}`plain`
        {glue:text}`other.ipynb::elsewhere`
        ```{glue:figure} curve
        :name: fig
        ```
        :::{glue:math} formula
        :::
        """
    )
    assert lost_outputs.glue_keys_named(source) == {"loss", "figure_key", "table", "plain", "curve", "formula"}
