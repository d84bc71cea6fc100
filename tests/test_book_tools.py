"""The book build's own machinery, tested without building the book: the lessons' kernels
(_ext/book_fixes.py, fix 6) and where the build keeps its execution cache (tools/build_book.py)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from book_build import ROOT

sys.path.insert(0, str(ROOT / "_ext"))
sys.path.insert(0, str(ROOT / "tools"))

import book_fixes  # noqa: E402
import build_book  # noqa: E402


def _notebook(source: str) -> nbformat.NotebookNode:
    notebook = nbformat.v4.new_notebook()
    notebook.cells.append(nbformat.v4.new_code_cell(source))
    return notebook


def test_lesson_kernels_listen_on_unix_sockets_and_leave_nothing_behind():
    """Kernels on TCP ports raced for them when several Sphinx processes started kernels at once (a cold
    build with 8 processes died in 11 s with `Address already in use`); on Unix sockets there is no port."""
    managers = []
    client = NotebookClient(
        _notebook("6 * 7"),
        kernel_manager_class=book_fixes.IpcKernelManager,
        on_notebook_start=lambda notebook: managers.append(client.km),
    )
    executed = client.execute()
    assert executed.cells[0].outputs[0]["data"]["text/plain"] == "42"
    (manager,) = managers
    assert manager.transport == "ipc"
    folder = Path(manager.ip).parent
    assert folder.name.startswith("jb-kernel-")
    assert len(f"{manager.ip}-{manager.shell_port}") < 100, "a Unix socket path must stay under 108 bytes"
    assert not folder.exists(), f"{folder} was left behind after the kernel shut down"


def test_the_extension_makes_unix_socket_kernels_the_default():
    original = NotebookClient.__dict__["_kernel_manager_class_default"]
    try:
        assert NotebookClient(_notebook("1")).kernel_manager_class is not book_fixes.IpcKernelManager
        book_fixes.use_ipc_kernels()
        assert NotebookClient(_notebook("1")).kernel_manager_class is book_fixes.IpcKernelManager
    finally:
        NotebookClient._kernel_manager_class_default = original
    assert NotebookClient(_notebook("1")).kernel_manager_class is not book_fixes.IpcKernelManager


def test_the_execution_cache_is_where_jupyter_book_looks(tmp_path):
    assert build_book.cache_dir([".", "-W", "--all"]) == Path(".") / "_build" / ".jupyter_cache"
    assert build_book.cache_dir(["book", "--path-output", str(tmp_path)]) == tmp_path / "_build" / ".jupyter_cache"


def test_the_cache_database_exists_before_the_parallel_read(tmp_path):
    """Every Sphinx process creating the database at once failed with `table settings already exists`."""
    cache = tmp_path / "_build" / ".jupyter_cache"
    build_book.prepare_cache(cache)
    assert (cache / "global.db").is_file()
    build_book.prepare_cache(cache)  # a second time is harmless


def test_the_cache_is_emptied_when_course_code_changes(tmp_path):
    """The cache keys a page on its own code cells: a lesson whose course/ module changed kept last build's outputs.
    A cached record stands for a lesson's executed outputs here."""
    book, cache = tmp_path / "book", tmp_path / "book" / "_build" / ".jupyter_cache"
    (book / "course").mkdir(parents=True)
    (book / "course" / "book.py").write_text("PALETTE = ['#0072B2']\n")
    assert not build_book.prepare_cache(cache, book)  # a first build: nothing to empty
    (cache / "executed-lesson").write_text("outputs")
    assert not build_book.prepare_cache(cache, book)  # nothing changed: the outputs stay
    assert (cache / "executed-lesson").is_file()
    (book / "course" / "book.py").write_text("PALETTE = ['#D55E00']\n")
    assert build_book.prepare_cache(cache, book)
    assert not (cache / "executed-lesson").exists() and (cache / "global.db").is_file()
    (book / "course" / "__pycache__").mkdir()
    (book / "course" / "__pycache__" / "book.cpython-311.pyc").write_bytes(b"bytecode")
    (cache / "executed-lesson").write_text("outputs")
    assert not build_book.prepare_cache(cache, book)  # bytecode is not course code
    (book / "course" / "corpus.txt").write_text("a new file the lessons read\n")
    assert build_book.prepare_cache(cache, book)


def test_the_book_folder_is_found_among_the_options():
    assert build_book.book_dir(["--path-output", "out", "book", "-W"]) == Path("book")
    assert build_book.book_dir(["-W", "--all"]) == Path(".")


def test_source_maps_are_dropped_with_the_comments_that_name_them(tmp_path):
    scripts = tmp_path / "_static" / "scripts"
    scripts.mkdir(parents=True)
    (scripts / "theme.js").write_text("var a = 1;\n//# sourceMappingURL=theme.js.map\n")
    (scripts / "theme.js.map").write_text("{}")
    (scripts / "theme.css").write_text("a{}\n/*# sourceMappingURL=theme.css.map*/")
    (scripts / "theme.css.map").write_text("{}")
    (scripts / "plain.js").write_text("var b = 2;\n")

    class Builder:
        format = "html"

    class App:
        outdir = str(tmp_path)
        builder = Builder()

    book_fixes.drop_source_maps(App(), None)
    assert sorted(p.name for p in scripts.iterdir()) == ["plain.js", "theme.css", "theme.js"]
    assert (scripts / "theme.js").read_text() == "var a = 1;"
    assert (scripts / "theme.css").read_text() == "a{}"
    assert (scripts / "plain.js").read_text() == "var b = 2;\n"


def test_the_builds_kernels_skip_the_slow_optional_import(monkeypatch):
    """tools/book_site/sitecustomize.py reaches the lesson kernels: jsonschema's optional rfc3987_syntax
    (1.1 s of grammar compilation per process) is seen as absent there."""
    monkeypatch.setenv("PYTHONPATH", os.environ.get("PYTHONPATH", ""))
    monkeypatch.setitem(sys.modules, "rfc3987_syntax", sys.modules.get("rfc3987_syntax"))
    build_book.use_book_site()
    source = "import sys, jsonschema\nprint('rfc3987_syntax' in sys.modules and sys.modules['rfc3987_syntax'] is None)"
    executed = NotebookClient(_notebook(source), kernel_name="python3").execute()
    assert executed.cells[0].outputs[0]["text"].strip() == "True"


def test_the_slowest_pages_are_read_first_one_per_process():
    import yaml

    toc = (ROOT / "_toc.yml").read_text()
    files = {entry for entry in _toc_files(yaml.safe_load(toc))}
    missing = [name for name in build_book.READ_FIRST if name not in files]
    assert not missing, f"READ_FIRST names pages that are not in _toc.yml: {missing}"
    pages = ["intro", "chapters/00_setup", *reversed(build_book.READ_FIRST)]
    order = build_book.reading_order(pages)
    assert order == [*build_book.READ_FIRST, "chapters/00_setup", "intro"]
    tasks = build_book.task_order(order, 2)
    assert all(len(task) == 1 for task in tasks)
    # Sphinx starts the first two at once, then the task added last of those waiting (dict.popitem)
    import inspect

    from sphinx.util.parallel import ParallelTasks

    assert "self._precvsWaiting.popitem()" in inspect.getsource(ParallelTasks._join_one), (
        "Sphinx changed: see task_order"
    )
    started, waiting = [t[0] for t in tasks[:2]], {i: t[0] for i, t in enumerate(tasks[2:])}
    while waiting:
        started.append(waiting.popitem()[1])
    assert started == order


def _toc_files(node):
    if isinstance(node, dict):
        if "file" in node:
            yield node["file"]
        if "root" in node:
            yield node["root"]
        for value in node.values():
            yield from _toc_files(value)
    elif isinstance(node, list):
        for item in node:
            yield from _toc_files(item)
