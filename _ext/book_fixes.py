"""Local Sphinx extension: fixes for Jupyter Book 1.0.4 under Sphinx 7.4.

Loaded by ``_config.yml`` (``sphinx.local_extensions``).

1. Inline scripts emitted twice. An extension that calls ``app.add_js_file(None,
   body=...)`` after the HTML builder exists (sphinx-thebe in
   ``env-before-read-docs``, sphinx-togglebutton in ``builder-inited``) gets its
   script registered twice by Sphinx 7.4: once directly on the builder as
   ``_JavaScript(None, body=...)`` and once more in
   ``StandaloneHTMLBuilder.prepare_writing()``, which re-adds every registry entry
   as ``_JavaScript('', body=...)``. ``None != ''``, so the builder's de-duplication
   misses it and each page carries two copies of
   ``<script>const THEBE_JS_URL = ...</script>``; Chromium then logs
   ``SyntaxError: Identifier 'THEBE_JS_URL' has already been declared``.
   Fix: on ``html-page-context`` (late priority, after the themes and myst-nb have
   added their per-page scripts) drop later copies of a script, treating the
   filenames ``None`` and ``''`` (both "inline script") as the same.

2. Thebe when there is no Thebe button. sphinx-thebe always injects its loader,
   which names a third-party host (unpkg.com) and a Binder repository, even when
   ``launch_buttons.thebe`` is false and nothing can start it. This book uses Colab
   instead, so when the theme's ``launch_buttons.thebe`` is off we disconnect
   sphinx-thebe's two page hooks: no Thebe scripts, no third-party URL in pages.

3. Kernel warning in the build log. ipykernel >= 7.4 logs
   ``[IPKernelApp] WARNING | Kernel is running over TCP without encryption`` when
   it is started without CurveZMQ keys, which jupyter_client >= 8.10 provisions
   only if ``KernelManager.transport_encryption`` is not "disabled" (its
   default). myst-nb and jupyter-cache execute the lessons in this process with a
   default-configured kernel manager, so we change that default to "auto" here:
   keys are provisioned when the kernelspec declares Curve support (ipykernel's
   does) and nothing changes otherwise. The warning goes away because the kernel
   does what it asks for.

4. MathJax not vendored. ``mathjax_path`` points into ``_vendor/mathjax`` (filled by
   ``tools/vendor_mathjax.py``); if it is missing, say so and how to fix it, instead
   of publishing pages that show raw TeX.

5. Pages read one at a time. Sphinx reads (and myst-nb executes) pages in parallel
   processes only when every extension declares that safe; two that Jupyter Book 1
   always loads declare nothing, so every build was serial. Both do nothing in this
   book's HTML builds: sphinx_multitoc_numbering renumbers only when
   ``use_multitoc_numbering`` is on (it is off in ``_config.yml``), and
   sphinx_jupyterbook_latex acts only for the LaTeX builder. They are declared safe
   for reading in that case (``tools/build_book.py`` asks Sphinx for the processes).

6. Kernels racing for TCP ports. jupyter_client picks a kernel's five ports by binding port 0 and
   closing it; the kernel binds them a second later. With several Sphinx processes starting kernels
   at once, two can be handed the same port: the second kernel dies with ``ZMQError: Address already
   in use``, myst-nb reports "Kernel died before replying to kernel_info", Sphinx aborts the parallel
   read and the other kernels are shut down mid-cell (``ZMQError: Socket operation on non-socket`` at
   the end of the log). Measured: a cold build with 8 processes failed so after 11 s. Fix: the
   lessons' kernels talk over Unix sockets in a folder of their own (``IpcKernelManager``), so there
   is no port to race for.

7. Source maps. The theme ships ``.map`` files for its scripts and styles (3.5 MB, a seventh of the
   site), which only a browser's developer tools ever fetch. They are removed after the build with the
   ``sourceMappingURL`` comments that name them, so no page points at a file that is not there.

8. Accessible names (WCAG 2.1: axe-core's ``summary-name`` and ``label-content-name-mismatch``, both
   "serious", on every page of a stock build, light and dark). The theme's sidebar writes each chapter's
   expander as ``<summary>`` holding only an icon, so a screen reader announces a nameless control; its
   search buttons are labelled "Search" while they show "Search Ctrl+K" (speech-input users say what they
   see); its colour-mode button's icons carry titles ("Light", "Dark", ...) that Font Awesome's script turns
   into SVG ``<title>`` text inside the button, not in its label.
   After the build every page is rewritten: each expander is named after the chapter it opens ("Pages
   of <chapter>"), the search buttons keep their visible text as their name (the redundant ``aria-label``
   goes), and the mode icons lose their titles and are marked decorative (the button keeps "Color mode").
   tests/test_browser.py runs axe-core on every page, both modes, both widths.
"""

from __future__ import annotations

import html
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from jupyter_client import AsyncKernelManager
from nbclient import NotebookClient
from sphinx.application import Sphinx
from sphinx.util import logging
from traitlets import default

logger = logging.getLogger(__name__)

__version__ = "0.1.0"

_THEBE_HOOKS = {
    ("sphinx_thebe", "init_thebe_core"),
    ("sphinx_thebe", "update_thebe_context"),
}


def _script_key(script: Any) -> tuple:
    filename = getattr(script, "filename", script)
    attributes = getattr(script, "attributes", {}) or {}
    return (filename or "", getattr(script, "priority", None), tuple(sorted(attributes.items())))


def dedupe_scripts(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    scripts = context.get("script_files")
    if not isinstance(scripts, list):
        return
    seen: set[tuple] = set()
    unique = []
    for script in scripts:
        key = _script_key(script)
        if key in seen:
            continue
        seen.add(key)
        unique.append(script)
    if len(unique) != len(scripts):
        scripts[:] = unique  # the builder resets this list from its backup before the next page


def disable_thebe_without_button(app: Sphinx) -> None:
    launch = (app.config.html_theme_options or {}).get("launch_buttons") or {}
    if launch.get("thebe"):
        return
    for event in ("env-before-read-docs", "doctree-resolved"):
        for listener in list(app.events.listeners.get(event, [])):
            handler = listener.handler
            if (getattr(handler, "__module__", None), getattr(handler, "__name__", None)) in _THEBE_HOOKS:
                app.disconnect(listener.id)
                logger.verbose("[book_fixes] launch_buttons.thebe is off: disconnected %s", handler.__name__)


def enable_kernel_transport_encryption() -> None:
    try:
        import zmq
        from jupyter_client.manager import KernelManager
    except ImportError:
        return
    trait = KernelManager.class_traits().get("transport_encryption")
    if trait is None or not zmq.has("curve"):
        return  # older jupyter_client (no such option) or libzmq without Curve
    if trait.default_value == "disabled":
        trait.default_value = "auto"


class IpcKernelManager(AsyncKernelManager):
    """A kernel on Unix sockets in a private temporary folder (short paths: a socket path is limited to
    107 bytes), the folder removed with the kernel's other files when it shuts down (6.)."""

    @default("transport")
    def _default_transport(self) -> str:
        return "ipc"

    @default("ip")
    def _default_ip(self) -> str:
        return os.path.join(tempfile.mkdtemp(prefix="jb-kernel-"), "ipc")

    def cleanup_ipc_files(self) -> None:
        super().cleanup_ipc_files()
        shutil.rmtree(os.path.dirname(self.ip), ignore_errors=True)


def use_ipc_kernels() -> None:
    """Make IpcKernelManager the default of nbclient, which myst-nb and jupyter-cache execute with (6.)."""
    NotebookClient._kernel_manager_class_default = lambda self: IpcKernelManager


def check_local_mathjax(app: Sphinx) -> None:
    path = app.config.mathjax_path or ""
    if "://" in path or path.startswith("//"):
        return
    static_dirs = [Path(app.confdir, entry) for entry in app.config.html_static_path]
    if not any((directory / path).is_file() for directory in static_dirs):
        logger.warning(
            "MathJax is not vendored: mathjax_path %r is in no html_static_path folder, so pages "
            "would show raw TeX; run `python tools/vendor_mathjax.py`",
            path,
        )


# Extensions Jupyter Book 1 loads that declare no parallel safety and do nothing in an HTML build (5.).
IDLE_IN_HTML = {"sphinx_multitoc_numbering": "use_multitoc_numbering", "sphinx_jupyterbook_latex": None}


def declare_idle_extensions_parallel_safe(app: Sphinx) -> None:
    if app.builder.format != "html":
        return
    for name, setting in IDLE_IN_HTML.items():
        extension = app.extensions.get(name)
        if extension is None or getattr(extension, "parallel_read_safe", None) is not None:
            continue
        if setting is not None and app.config._raw_config.get(setting, False):
            continue  # it has work to do: leave Sphinx's judgement (serial) alone
        extension.parallel_read_safe = True


SOURCE_MAP_COMMENT = re.compile(r"\n?(//# sourceMappingURL=[^\n]*|/\*# sourceMappingURL=[^\n]*?\*/)\s*$")


def drop_source_maps(app: Sphinx, exception: Exception | None) -> None:
    static = Path(app.outdir) / "_static"
    if exception is not None or app.builder.format != "html" or not static.is_dir():
        return
    for source_map in static.rglob("*.map"):
        source_map.unlink()
        script = source_map.with_suffix("")  # bootstrap.js.map -> bootstrap.js
        if script.is_file():
            text = script.read_text(encoding="utf8")
            script.write_text(SOURCE_MAP_COMMENT.sub("", text), encoding="utf8")


# (8.) The theme's markup, as pydata-sphinx-theme 0.16 writes it; each pattern is counted by the browser test's axe run.
SIDEBAR_EXPANDER = re.compile(
    r'(<li class="toctree-l\d[^"]*has-children[^"]*"><a\b[^>]*>)(.*?)(</a>\s*<details(?:\s[^>]*)?>\s*)<summary>', re.S
)
SEARCH_BUTTON_LABEL = re.compile(r'(<button class="btn search-button-field[^"]*"[^>]*?) aria-label="Search"')
MODE_ICON = re.compile(r'(<i class="theme-switch [^"]*" data-mode="\w+")\s+title="[^"]*"')
TAG = re.compile(r"<[^>]+>")


def _expander_named(match: re.Match) -> str:
    title = html.unescape(TAG.sub("", match.group(2))).strip()
    label = html.escape(f"Pages of {title}", quote=True)
    return f'{match.group(1)}{match.group(2)}{match.group(3)}<summary aria-label="{label}">'


def name_theme_controls(page: str) -> str:
    """The page with the theme's nameless or mislabelled controls named (8.)."""
    page = SIDEBAR_EXPANDER.sub(_expander_named, page)
    page = SEARCH_BUTTON_LABEL.sub(r"\1", page)
    return MODE_ICON.sub(r'\1 aria-hidden="true"', page)


def fix_accessible_names(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    for page in Path(app.outdir).rglob("*.html"):
        text = page.read_text(encoding="utf8")
        fixed = name_theme_controls(text)
        if fixed != text:
            page.write_text(fixed, encoding="utf8")


def setup(app: Sphinx) -> dict[str, Any]:
    enable_kernel_transport_encryption()
    use_ipc_kernels()
    app.connect("builder-inited", declare_idle_extensions_parallel_safe)
    app.connect("builder-inited", check_local_mathjax)
    app.connect("builder-inited", disable_thebe_without_button)
    app.connect("html-page-context", dedupe_scripts, priority=900)
    app.connect("build-finished", drop_source_maps)
    app.connect("build-finished", fix_accessible_names)
    return {"version": __version__, "parallel_read_safe": True, "parallel_write_safe": True}
