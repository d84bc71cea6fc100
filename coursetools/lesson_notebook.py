"""Each lesson as a Jupyter notebook for Colab: the page's MyST roles and directives turned into plain Markdown,
and a first code cell that gives it what the book's build gives it (`glue`, the course's code)."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from coursetools.pages import public_markdown
from coursetools.site import BookSettings, PublishError

# The first code cell of a lesson notebook that needs it: the book's build gives the lessons two
# things that Colab (and a Jupyter without the book's packages) does not have.
SETUP_CELL_HEAD = """\
# Setup, added to the website's lesson so that it runs here too (on Colab, or in Jupyter).
import sys
import types
from pathlib import Path
"""
SETUP_GLUE = """
# On the website, myst_nb's `glue` hands numbers computed here to the text; here it keeps them in `glued`.
from IPython.display import display as _display

glued = {}


def _glue(name, value, display=True):
    glued[name] = value
    if display:
        _display(value)


sys.modules["myst_nb"] = types.ModuleType("myst_nb")
sys.modules["myst_nb"].glue = _glue
"""
SETUP_COURSE = """
try:  # the course's own code that this lesson imports: {files}
    {imports}
except ImportError:
    if not (Path.cwd().parent / "course" / "provided.py").is_file():  # in a clone, the lesson finds it there
        # On Colab: fetch it from the course's public repository.
        import urllib.request

        Path("course").mkdir(exist_ok=True)
        for name in {names}:
            urllib.request.urlretrieve("{base}" + name + ".py", f"course/{name}.py")
"""
# Added to SETUP_COURSE when the lesson reads data files of course/ (named in its code, e.g. "corpus.txt").
SETUP_COURSE_DATA = """        for name in {data}:  # the data files the lesson reads, beside the course's code
            urllib.request.urlretrieve("{base}" + name, f"course/{name}")
"""
# A data file of course/ named in a lesson's code: a string literal such as "corpus.txt".
_COURSE_DATA = re.compile(r"""["']([\w.-]+\.txt)["']""")
# Tag of the code cells that a lesson notebook has and its page does not (set-up, glued displays).
ADDED_TAG = "notebook-only"
GLUE_NOTE = (
    "> This is the lesson page of the course website as a notebook, to run its code and change it: run the cells "
    "in order from the top. Where the website shows a number computed by the code, the text here shows its name in "
    'code font, such as `{example}`; after running the notebook, `glued["{example}"]` holds it.'
)
_GLUE_ROLE = re.compile(r"\{glue(?::\w*)?\}`([^`:]+)(?::[^`]*)?`")
_DOC_ROLE = re.compile(r"\{doc\}`([^`]+)`")
_REF_ROLE = re.compile(r"\{ref\}`([^`]+)`")
_LABEL = re.compile(r"^\(([\w-]+)\)=\s*$", re.MULTILINE)
# ```{glue:figure} name / ```{glue:md} name / ```{glue} name, with options and a caption
_GLUE_DIRECTIVE = re.compile(
    r"^```\{glue(?::(\w+))?\}[ \t]*(\S+)[ \t]*\n((?::[\w-]+:[^\n]*\n)*)\n?(.*?)\n?```[ \t]*$", re.MULTILINE | re.DOTALL
)
_ADMONITION = re.compile(
    r"^```\{admonition\}[ \t]*([^\n]*)\n((?::[\w-]+:[^\n]*\n)*)\n?(.*?)\n```[ \t]*$", re.MULTILINE | re.DOTALL
)
# :::{dropdown} Title (sphinx-design, the lessons' hidden answers), options, body, :::
_DROPDOWN = re.compile(
    r"^:::\{dropdown\}[ \t]*([^\n]*)\n((?::[\w-]+:[^\n]*\n)*)\n?(.*?)\n:::[ \t]*$", re.MULTILINE | re.DOTALL
)


def imports_module(code: str, module: str) -> bool:
    return re.search(rf"^\s*(from|import)\s+{re.escape(module)}\b", code, re.MULTILINE) is not None


def _labels(text: str) -> dict[str, str]:
    """MyST targets `(label)=` -> the heading that follows each."""
    found = {}
    for match in _LABEL.finditer(text):
        heading = re.search(r"^#+\s+(.+?)\s*$", text[match.end() :], re.MULTILINE)
        found[match.group(1)] = heading.group(1) if heading else match.group(1)
    return found


def notebook_markdown(text: str, titles: dict[str, str], labels: dict[str, str], folder: str) -> str:
    """A lesson's MyST Markdown as plain notebook Markdown (what Colab and Jupyter render).

    Glued numbers become their names in code font, cross-references the referenced page's or
    section's title in italics, admonitions block quotes, dropdowns collapsed `<details>`; MyST comments and
    targets are dropped.
    """

    def doc(match: re.Match) -> str:
        target = match.group(1)
        explicit = re.match(r"(.*?)\s*<([^>]+)>$", target)
        if explicit:
            return f"*{explicit.group(1)}*"
        docname = target.lstrip("/") if target.startswith("/") else f"{folder}/{target}".lstrip("/")
        return f"*{titles.get(docname, target)}*"

    def admonition(match: re.Match) -> str:
        body = "\n".join(f"> {line}" if line else ">" for line in match.group(3).splitlines())
        return f"> **{match.group(1).strip()}**\n>\n{body}"

    def dropdown(match: re.Match) -> str:  # HTML's own collapsed block, which notebooks render
        return f"<details>\n<summary>{match.group(1).strip()}</summary>\n\n{match.group(3)}\n\n</details>"

    text = _ADMONITION.sub(admonition, text)
    text = _DROPDOWN.sub(dropdown, text)
    text = _GLUE_ROLE.sub(lambda m: f"`{m.group(1)}`", text)
    text = _DOC_ROLE.sub(doc, text)
    text = _REF_ROLE.sub(lambda m: f"*{labels.get(m.group(1), m.group(1))}*", text)
    lines = [line for line in text.splitlines() if not line.startswith("%") and not _LABEL.match(line)]
    return "\n".join(lines).strip("\n")


def lesson_notebook(
    md_path: Path, settings: BookSettings, titles: dict[str, str], folder: str = "", text: str | None = None
) -> NotebookNode:
    """A lesson (MyST Markdown notebook) as a Jupyter notebook that runs and reads outside the book
    (`text`: the page as published, when it differs from the file's public Markdown)."""
    from myst_nb.core.read import read_myst_markdown_notebook

    text = public_markdown(md_path.read_text(encoding="utf-8")) if text is None else text
    nb = read_myst_markdown_notebook(text, path=md_path)
    labels = _labels(text)
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    # glue comes from myst_nb, directly or through course/book.py (the lessons' shared set-up), which imports it when
    # called: the stand-in below is in place by then
    uses_glue = imports_module(code, "myst_nb") or imports_module(code, "course.book")
    if uses_glue:
        other = set(re.findall(r"^\s*from\s+myst_nb\S*\s+import\s+(.+)$", code, re.MULTILINE)) - {"glue"}
        if other or re.search(r"^\s*import\s+myst_nb", code, re.MULTILINE):
            raise PublishError(
                f"{md_path.name}: a lesson may take only `glue` from myst_nb (`from myst_nb import glue`), "
                "the one thing its notebook for Colab replaces"
            )
    cells = []
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            cells.append(cell)
            continue
        # A glued figure or table is shown where the website shows it: a code cell displays it.
        start = 0
        pieces: list[NotebookNode] = []
        for match in _GLUE_DIRECTIVE.finditer(cell.source):
            pieces.append(nbformat.v4.new_markdown_cell(cell.source[start : match.start()]))
            shown = nbformat.v4.new_code_cell(f'glued["{match.group(2)}"]  # shown here on the website')
            shown.metadata["tags"] = [ADDED_TAG]
            pieces.append(shown)
            if match.group(4).strip():
                pieces.append(nbformat.v4.new_markdown_cell(f"*{match.group(4).strip()}*"))
            start = match.end()
        pieces.append(nbformat.v4.new_markdown_cell(cell.source[start:]))
        for piece in pieces:
            if piece.cell_type == "markdown":
                piece.source = notebook_markdown(piece.source, titles, labels, folder)
                if not piece.source.strip():
                    continue
            cells.append(piece)
    setup = SETUP_CELL_HEAD
    if uses_glue:
        setup += SETUP_GLUE
    if imports_module(code, "course"):
        modules = sorted(set(re.findall(r"^\s*(?:from|import)\s+course\.(\w+)", code, re.MULTILINE))) or ["provided"]
        data = sorted(set(_COURSE_DATA.findall(code)))
        files = [f"course/{m}.py" for m in modules] + [f"course/{name}" for name in data]
        setup += (
            SETUP_COURSE.replace("{files}", ", ".join(files))
            .replace("{imports}", "\n    ".join(f"import course.{m}  # noqa: F401" for m in modules))
            .replace("{names}", repr(modules))
            .replace("{base}", settings.raw_url("course/"))
        )
        if data:
            setup += SETUP_COURSE_DATA.replace("{data}", repr(data)).replace("{base}", settings.raw_url("course/"))
    at = 1 if cells and cells[0].cell_type == "markdown" else 0  # after the title
    if uses_glue:
        example = _GLUE_ROLE.search(text)
        if example:
            cells.insert(at, nbformat.v4.new_markdown_cell(GLUE_NOTE.replace("{example}", example.group(1))))
            at += 1
    if setup != SETUP_CELL_HEAD:
        cell = nbformat.v4.new_code_cell(setup.rstrip("\n"))
        cell.metadata["tags"] = [ADDED_TAG]
        cells.insert(at, cell)
    nb.cells = cells
    nb.metadata.pop("jupytext", None)
    nb.metadata.setdefault("language_info", {"name": "python"})
    for index, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{index}"  # stable ids: publishing twice writes the same bytes
    return nb


def lesson_notebook_path(docname: str, settings: BookSettings) -> str:
    """Same rule as _ext/course_site.py: <course_lesson_notebooks>/<page name>.ipynb."""
    return f"{settings.lesson_dir.strip('/')}/{docname.rsplit('/', 1)[-1]}.ipynb"
