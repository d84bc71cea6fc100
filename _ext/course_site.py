"""Local Sphinx extension: what this course's pages link to, and how they read on a phone.

Loaded by ``_config.yml`` (``sphinx.local_extensions``); settings in its ``sphinx.config``.

1. Colab buttons open notebooks of the public release. sphinx-book-theme builds the Colab
   link of a page from its source path: ``chapters/02_attention_by_hand.md`` for a lesson,
   a Markdown file that Colab cannot open. The public release repository (``repository.url``,
   written by ``autograder publish``) holds every lesson converted to a notebook in the
   folder ``course_lesson_notebooks`` (``lessons/02_attention_by_hand.ipynb``), so a lesson's
   Colab button is pointed there; an exercise page (an ``.ipynb`` source) keeps the theme's
   link, to the student notebook itself. Pages named in ``course_private_pages`` (the grading
   guide, which runs the autograder) are not in the public release: they get no Colab button.

2. Phone-width CSS. ``_ext/static/course.css`` is added to every page. It lives here, not in
   a ``_static`` folder: when a book has ``_static``, Jupyter Book 1 adds *every* ``.js`` file
   of *every* ``html_static_path`` folder to every page, and ``_vendor`` (MathJax) is one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

__version__ = "0.1.0"

STATIC_DIR = Path(__file__).resolve().parent / "static"
CSS_FILE = "course.css"
COLAB_TEXT = "Colab"


def lesson_notebook_path(docname: str, lesson_dir: str) -> str:
    """Where the public release keeps a lesson's notebook (repository-relative, no book prefix)."""
    return f"{lesson_dir.strip('/')}/{docname.rsplit('/', 1)[-1]}.ipynb"


def colab_target(app: Sphinx, pagename: str) -> str | None:
    """The repository path a page's Colab button should open, or None for no button."""
    if pagename in set(app.config.course_private_pages):
        return None
    suffix = Path(app.env.doc2path(pagename)).suffix
    if suffix == ".ipynb":
        return f"{pagename}.ipynb"
    return lesson_notebook_path(pagename, app.config.course_lesson_notebooks)


def _book_prefix(app: Sphinx) -> str:
    prefix = (app.config.html_theme_options or {}).get("path_to_docs", "").strip("/")
    return prefix + "/" if prefix else ""


def fix_colab_buttons(app: Sphinx, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    buttons = context.get("header_buttons")
    if not isinstance(buttons, list):
        return
    target = colab_target(app, pagename)
    for group in list(buttons):
        if not isinstance(group, dict) or group.get("label") != "launch-buttons":
            continue
        kept = []
        for button in group.get("buttons", []):
            if button.get("text") != COLAB_TEXT:
                kept.append(button)
                continue
            if target is None:
                continue
            # https://colab.research.google.com/github/<org>/<repo>/blob/<branch>/<path>
            head, sep, rest = button["url"].partition("/blob/")
            branch = rest.split("/", 1)[0]
            button["url"] = f"{head}{sep}{branch}/{_book_prefix(app)}{target}"
            kept.append(button)
        group["buttons"] = kept
        if not kept:
            buttons.remove(group)


def add_static_dir(app: Sphinx, config: Any) -> None:
    if str(STATIC_DIR) not in config.html_static_path:
        config.html_static_path.append(str(STATIC_DIR))


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("course_lesson_notebooks", "lessons", "html", types=[str])
    app.add_config_value("course_private_pages", [], "html", types=[list])
    app.connect("config-inited", add_static_dir)
    app.add_css_file(CSS_FILE)
    # after sphinx-book-theme's add_launch_buttons (priority 501)
    app.connect("html-page-context", fix_colab_buttons, priority=600)
    return {"version": __version__, "parallel_read_safe": True, "parallel_write_safe": True}
