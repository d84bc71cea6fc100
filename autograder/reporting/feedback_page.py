"""One notebook as one safe, self-contained HTML page: what the feedback pages are made of.

Any notebook in, one offline page out: nbconvert's `lab` template without anything it would fetch (scripts,
MathJax, fonts), math as MathML (`mathml`), colours that pass WCAG 2.1 AA in the light and the dark scheme, a
Content-Security-Policy that forbids scripts, remote loads and every style but the page's own (`page_csp`: the
hashes of its <style> elements, no 'unsafe-inline'). Every cell is data: rebuilt from the parts a page may show
(`student_output`, `rebuilt_cell`), and every path from it to the page goes through one sanitiser
(`sanitize.clean_html`, nh3): its HTML, its rendered Markdown, its formulas (`text/latex` outputs and Markdown
math, which `mathml.tex_to_mathml` has already cut to the MathML allow-list), its code and text outputs once
coloured; a raw cell is shown as text. Converting student text (Markdown, TeX) has one budget of CPU seconds per
page (`config.FEEDBACK_CONVERT_CPU_SECONDS`); what is left when it runs out is shown as text and the page says so.
Only the header cell `feedback.header_cell` makes (HEADER_KEY), written by the grader with every text escaped, is
put in the page as it is, and only when the caller says it is trusted.

This module knows nothing of grades, results or hidden tests: `feedback` builds the notebook a student is shown
and calls `render_html`; nothing here imports it.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import html
import math
import re
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import nbformat
from nbformat import NotebookNode

from autograder import config
from autograder.reporting.mathml import latex_output_to_mathml, markdown_renderer_class, scrolling_formulas, too_long
from autograder.reporting.sanitize import clean_html, valid_base64

HEADER_KEY = "autograder_feedback_header"  # the metadata that marks the header cell feedback_notebook makes
LATE_MARKER = "<!-- autograder: markdown shown as text -->"  # render_html says there what it did not convert


# What a page shows of a display output: MathML, sanitised HTML and Markdown, inline PNG and JPEG, text. Not
# JavaScript, SVG (it can hold scripts and remote loads), widgets or anything else.
SHOWN_MIME_TYPES = ("text/html", "text/markdown", "text/latex", "image/png", "image/jpeg", "text/plain")
MAX_IMAGE_PIXELS = 4000


def text_of(value) -> str:
    """A notebook field as one string (the format allows a list of lines)."""
    return "".join(str(v) for v in value) if isinstance(value, list) else str(value)


def _image_size(metadata) -> dict[str, int]:
    sizes = metadata if isinstance(metadata, dict) else {}
    return {
        key: value
        for key, value in sizes.items()
        if key in ("width", "height") and type(value) is int and 0 < value <= MAX_IMAGE_PIXELS
    }


def student_output(output) -> NotebookNode | None:
    """One output rebuilt from the parts a page may show (so nothing else of it reaches the template: no file
    names, no attributes spliced into a tag); None for an output type the notebook format does not have."""
    kind = output.get("output_type")
    if kind == "stream":
        name = "stderr" if output.get("name") == "stderr" else "stdout"
        return nbformat.v4.new_output("stream", name=name, text=text_of(output.get("text", "")))
    if kind == "error":
        return nbformat.v4.new_output(
            "error",
            ename=text_of(output.get("ename", "Error")),
            evalue=text_of(output.get("evalue", "")),
            traceback=[text_of(line) for line in output.get("traceback") or []],
        )
    if kind not in ("display_data", "execute_result"):
        return None
    data = output.get("data") or {}
    kept = {}
    for mime in SHOWN_MIME_TYPES:
        if mime in data:
            value = text_of(data[mime])
            if not mime.startswith("image/") or valid_base64(value):
                kept[mime] = value
    metadata = output.get("metadata") or {}
    sizes = {mime: _image_size(metadata.get(mime)) for mime in ("image/png", "image/jpeg") if mime in kept}
    if not kept:
        types = ", ".join(sorted(str(mime) for mime in data)[:3]) or "no data"
        kept = {"text/plain": f"[an output of type {types} is not shown on this page]"}
    shown = nbformat.v4.new_output("display_data", data=kept, metadata={m: v for m, v in sizes.items() if v})
    count = output.get("execution_count")
    if kind == "execute_result" and type(count) is int:  # shown with its Out[n] prompt
        shown.output_type, shown.execution_count = "execute_result", count
    return shown


def _attachments(cell) -> dict:
    """A Markdown cell's attached images, PNG and JPEG only."""
    kept = {}
    for name, bundle in (cell.get("attachments") or {}).items():
        images = {m: text_of(v) for m, v in (bundle or {}).items() if m in ("image/png", "image/jpeg")}
        images = {m: v for m, v in images.items() if valid_base64(v)}
        if images:
            kept[str(name)] = images
    return kept


def rebuilt_cell(cell, source: str) -> NotebookNode:
    """A fresh cell of the same type, with the grader's metadata only (no tags, no ids of the student's)."""
    metadata = {"nbgrader": dict(cell.metadata["nbgrader"])} if "nbgrader" in cell.get("metadata", {}) else {}
    if cell.cell_type == "code":
        count = cell.get("execution_count")
        new = nbformat.v4.new_code_cell(source, metadata=metadata)
        new.execution_count = count if type(count) is int else None
        return new
    if cell.cell_type == "markdown":
        new = nbformat.v4.new_markdown_cell(source, metadata=metadata)
        attachments = _attachments(cell)
        if attachments:
            new.attachments = attachments
        return new
    return nbformat.v4.new_raw_cell(source, metadata=metadata)


# The page a student gets is one file, read offline: nbconvert's `lab` template, less
# everything it would fetch from another host (require.js, MathJax, mermaid and widget
# scripts, all from cdnjs/unpkg). Its CSS is inlined already.
_PAGE_TEMPLATE = "autograder_feedback.html.j2"
_PAGE_TEMPLATE_SOURCE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js -%}
<meta http-equiv="Content-Security-Policy" content="{{ resources.autograder_csp }}">
{%- endblock html_head_js -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block html_head_css -%}
<meta name="color-scheme" content="light dark">
{{ resources.include_css("static/theme-dark.css")
   | replace('<style type="text/css">', '<style type="text/css" media="(prefers-color-scheme: dark)">', 1) }}
<style type="text/css">
/* math is MathML, laid out by the browser; a font with an OpenType MATH table stretches
   brackets and roots (whichever the system has; nothing is downloaded) */
math { font-family: "STIX Two Math", "Cambria Math", "Latin Modern Math", "DejaVu Math TeX Gyre", math;
       font-size: 1.15em; }
math[display="block"] { display: block math; margin: 0.8em 0; }
/* a formula wider than a phone scrolls in a box a keyboard can reach (mathml.scrolling_formulas) */
div.ag-formula { overflow-x: auto; overflow-y: hidden; }
/* a long name in prose (`torch.nn.functional.scaled_dot_product_attention`) breaks rather than widening its cell */
.jp-RenderedHTMLCommon :not(pre) > code, header.ag-summary code { overflow-wrap: anywhere; }
/* nbconvert clips a code line wider than its cell (overflow: hidden): the end of a long line, or of most lines on
   a phone, could not be read at all; here lines wrap */
.jp-InputArea-editor .highlight pre { white-space: pre-wrap; overflow-wrap: anywhere; }
code.tex-source { white-space: pre-wrap; }
code.tex-source.tex-display { display: block; margin: 0.8em 0; }
/* the grader's summary: above the notebook, outside it */
header.ag-summary { padding: 0 var(--jp-notebook-padding, 10px) 1em; margin-bottom: 1.5em;
                    border-bottom: 3px solid var(--jp-border-color1, #757575); }
header.ag-summary table { border-collapse: collapse; margin: 0.5em 0 1em; }
header.ag-summary td, header.ag-summary th { border: 1px solid var(--jp-border-color2, #999);
                                             padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
{{ resources.autograder_contrast_css }}
</style>
{%- endblock html_head_css -%}
{%- block body_header -%}
{{ super() }}
{%- if resources.autograder_header %}
<header class="ag-summary" id="ag-summary">
{{ resources.autograder_header }}
</header>
{%- endif %}
{%- endblock body_header -%}
{% block rawcell scoped %}{% endblock rawcell %}
{% block data_html scoped -%}
<div class="jp-RenderedHTMLCommon jp-RenderedHTML jp-OutputArea-output {{ extra_class }}" data-mime-type="text/html">
{{ output.data['text/html'] | clean_student_html }}
</div>
{%- endblock data_html %}
{%- block data_javascript scoped %}{%- endblock -%}
{%- block data_widget_view scoped %}{%- endblock -%}
{% block data_svg scoped -%}{%- endblock data_svg %}
{% block data_mermaid scoped -%}{%- endblock data_mermaid %}
{% block data_latex scoped %}
<div class="jp-RenderedLatex jp-OutputArea-output {{ extra_class }}" data-mime-type="text/latex">
{{ output.data['text/latex'] | latex2mathml }}
</div>
{%- endblock data_latex %}
"""

# Colours: WCAG 2.1 AA (text 4.5:1 against what is behind it) in the light and in the dark colour scheme, the
# reader's system setting choosing (`prefers-color-scheme`: the page runs no script, so it has no mode button).
# nbconvert's lab theme fails AA in places: `In [ ]` prompts greyed to half opacity (2.2:1), its code colours
# (numbers #080 on #f5f5f5: 4.25:1), ANSI colours (red on the error background: 2.7:1), links told from text by
# colour alone. Code is coloured by pygments' a11y-light and a11y-dark styles (made for AA against their own
# background, which the code cells take); ANSI colours by the palettes below, each foreground AA against each
# background of its scheme and against the page's output and error backgrounds (tests/test_feedback_page.py
# checks every pair). Bright ANSI colours are shown as the plain ones. A colour a 256-colour or true-colour escape
# code picks (nbconvert writes it as an inline style) cannot be checked in advance: the sanitiser drops that style
# (and the page's policy would block it), so such text takes the colour of the text around it.
CODE_STYLES = {"light": "a11y-light", "dark": "a11y-dark"}
ANSI_NAMES = ("black", "red", "green", "yellow", "blue", "magenta", "cyan", "white")
ANSI_FOREGROUND = {
    "light": ("#3e424d", "#b3261e", "#1a7332", "#765700", "#0b5cad", "#953b8c", "#0b6a6e", "#5c5c5c"),
    "dark": ("#a6a6a6", "#ff8f87", "#5fd97a", "#f2cc60", "#8cb8ff", "#f0a3e8", "#5fd9de", "#e6e6e6"),
}
ANSI_BACKGROUND = {
    "light": ("#e6e6e6", "#ffdddd", "#d8f5dc", "#fff3b0", "#dbeaff", "#f7ddf4", "#d5f5f6", "#ffffff"),
    "dark": ("#1e1e1e", "#4a1410", "#0f3d1a", "#3d3000", "#10284d", "#3d1238", "#0b3b3d", "#333333"),
}


def code_background(scheme: str) -> str:
    from pygments.styles import get_style_by_name

    return str(get_style_by_name(CODE_STYLES[scheme]).background_color)


def _scheme_css(scheme: str) -> str:
    """The rules of one colour scheme (the dark one goes inside a `prefers-color-scheme: dark` query)."""
    from pygments.formatters import HtmlFormatter

    rules = [f":root {{ --jp-cell-editor-background: {code_background(scheme)}; }}"]
    for name, fg, bg in zip(ANSI_NAMES, ANSI_FOREGROUND[scheme], ANSI_BACKGROUND[scheme], strict=True):
        rules.append(
            f".jp-RenderedText pre .ansi-{name}-fg, .jp-RenderedText pre .ansi-{name}-intense-fg {{ color: {fg}; }}"
        )
        rules.append(
            f".jp-RenderedText pre .ansi-{name}-bg, .jp-RenderedText pre .ansi-{name}-intense-bg "
            f"{{ background-color: {bg}; }}"
        )
    if scheme == "dark":
        # the light style's rules (nbconvert's, `.highlight .k`) are outweighed: every token first takes the text
        # colour, then the dark style's own (`:root .highlight .k`)
        prefix = ":root .highlight"
        rules.append(
            f"{prefix} span {{ color: inherit; background-color: transparent; font-weight: inherit; "
            "font-style: inherit; }"
        )
        formatter = HtmlFormatter(style=CODE_STYLES[scheme])
        rules += formatter.get_background_style_defs(prefix) + formatter.get_token_style_defs(prefix)
        # an image drawn for a white page (a transparent plot's black lines) stays legible
        rules.append(".jp-RenderedImage img { background-color: #fff; }")
    return "\n".join(rules)


@functools.cache
def contrast_css() -> str:
    """The page's colour rules, after nbconvert's (which set the light style's code colours: _exporter)."""
    light = [
        # a static page has no active cell: every prompt in full colour (grey-700: 6.2:1)
        ":root { --jp-cell-prompt-not-active-opacity: 1; }",
        ".jp-RenderedHTMLCommon a:link, .jp-RenderedHTMLCommon a:visited { text-decoration: underline; }",
        _scheme_css("light"),
    ]
    return "\n".join(light) + "\n@media (prefers-color-scheme: dark) {\n" + _scheme_css("dark") + "\n}"


class _RenderTimeout(BaseException):
    """The page's time to convert student text ran out. A BaseException: the converters catch Exception (a
    malformed formula is shown as its source), and running out of time must not pass for a malformed formula."""


@contextmanager
def _cpu_limit(seconds: float) -> Iterator[None]:
    """_RenderTimeout in the block after `seconds` of this process's CPU time (ITIMER_PROF: user and system, the
    clock of time.process_time): mistune takes minutes on some inputs (`[` * 50,000), latex2mathml 43 s on a
    500,000-character formula. CPU time, not wall time, so that a loaded machine does not cut a page short. Only in
    the main thread (signals); elsewhere the budget is checked between conversions."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_timer(signum, frame):
        raise _RenderTimeout

    previous = signal.signal(signal.SIGPROF, on_timer)
    signal.setitimer(signal.ITIMER_PROF, max(seconds, 0.001))
    try:
        yield
    finally:
        # a timer that fires as the block ends raises here, inside the first `finally`: the previous handler is
        # put back whatever happens
        try:
            signal.setitimer(signal.ITIMER_PROF, 0)
        finally:
            signal.signal(signal.SIGPROF, previous)


class ConversionBudget:
    """One page's CPU seconds for converting student text (every Markdown cell and output, every formula), and
    what was not converted: `late` items shown as text because the budget ran out, `long_formulas` shown as their
    source because they are longer than config.FEEDBACK_MAX_FORMULA_CHARS."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.deadline = time.process_time() + seconds
        self.late = 0
        self.long_formulas = 0

    def convert(self, function, *args) -> str | None:
        """function(*args) within what is left of the budget; None (counted in `late`) when it ran out."""
        left = self.deadline - time.process_time()
        if left <= 0:
            self.late += 1
            return None
        try:
            with _cpu_limit(left):
                return function(*args)
        except _RenderTimeout:
            # Spent, whatever time.process_time says next: the kernel's process timer and that clock need not agree
            # (a CI run converted the formula after a cell the timer had cut), and a cut is the budget's end.
            self.deadline = -math.inf
            self.late += 1
            return None

    def notes(self) -> list[str]:
        """What the page says, above the notebook, about what it did not convert."""
        said = []
        if self.late:
            said.append(
                f"{self.late:,} Markdown cell(s), formula(s) or output(s) are shown as plain text: this page had "
                f"{self.seconds:g} CPU seconds to convert Markdown and formulas."
            )
        if self.long_formulas:
            said.append(
                f"{self.long_formulas:,} formula(s) longer than {config.FEEDBACK_MAX_FORMULA_CHARS:,} characters are "
                "shown as their TeX source."
            )
        return said


def _unchanged(text: str) -> str:
    return text


def _as_text(source: str) -> str:
    return f"<pre>{html.escape(source)}</pre>"


def _exporter():
    from jinja2 import DictLoader, pass_context
    from nbconvert import HTMLExporter
    from nbconvert.filters.markdown_mistune import MarkdownWithMath

    renderer_class = markdown_renderer_class()

    class FeedbackExporter(HTMLExporter):
        budget: ConversionBudget  # render_html gives each page its own

        @pass_context
        def markdown2html(self, context, source):
            cell = context.get("cell", {})
            renderer = renderer_class(
                escape=False,
                attachments=cell.get("attachments", {}),
                embed_images=self.embed_images,
                path=context.get("resources", {}).get("metadata", {}).get("path", ""),
                anchor_link_text=self.anchor_link_text,
                exclude_anchor_links=self.exclude_anchor_links,
                **self.lexer_options,
            )
            rendered = self.budget.convert(MarkdownWithMath(renderer=renderer).render, source)
            self.budget.long_formulas += renderer.formulas_too_long
            if rendered is None:
                return _as_text(source)
            # Markdown is HTML: a student's cell or Markdown output is sanitised after rendering (formulas included)
            return scrolling_formulas(clean_html(rendered))

        def latex2mathml(self, latex: str) -> str:
            """A `text/latex` output as MathML, within the page's budget, sanitised like every student HTML."""
            if too_long(latex.strip()):
                self.budget.long_formulas += 1
            converted = self.budget.convert(latex_output_to_mathml, latex)
            if converted is None:
                return _as_text(latex)
            return scrolling_formulas(clean_html(converted))

        def default_filters(self):
            for name, function in super().default_filters():
                if name in ("ansi2html", "highlight_code"):
                    # text outputs and code, once nbconvert has coloured them: through the sanitiser too (the only
                    # attribute it would drop is a 256-colour escape code's inline style)
                    yield (name, _then_cleaned(function))
                else:
                    yield (name, function)
            yield ("latex2mathml", self.latex2mathml)
            yield ("clean_student_html", clean_html)
            # the lab template pipes a code cell's highlighted source through `clean_html`: this page's sanitiser,
            # not nbconvert's (bleach, which keeps every class and id)
            yield ("clean_html", clean_html)
            # nbconvert's rewrite of `files/` links in rendered Markdown: the sanitiser drops relative links anyway,
            # and its regular expression took 10 s on 30,000 `[` (quadratic, in C: no deadline can stop it)
            yield ("strip_files_prefix", _unchanged)

    from traitlets.config import Config

    return FeedbackExporter(
        config=Config({"CSSHTMLHeaderPreprocessor": {"style": CODE_STYLES["light"]}}),
        template_name="lab",
        template_file=_PAGE_TEMPLATE,
        extra_loaders=[DictLoader({_PAGE_TEMPLATE: _PAGE_TEMPLATE_SOURCE})],
    )


def _then_cleaned(function):
    def cleaned(*args, **kwargs):
        return clean_html(function(*args, **kwargs))

    return cleaned


# The page runs no script, loads nothing (its images are data: URLs) and takes no style but its own <style>
# elements, named by their hashes: a second line behind the sanitiser, for the browsers that read it. Without
# 'unsafe-inline', a style attribute is inert whatever put it in the page.
_CSP_PLACEHOLDER = "autograder-content-security-policy"
_STYLE_ELEMENT = re.compile(r"<style\b[^>]*>(.*?)</style>", re.S | re.I)


def page_csp(styles: list[str]) -> str:
    """The page's policy, allowing the style elements whose texts are `styles` and nothing else."""
    hashes = " ".join(
        f"'sha256-{base64.b64encode(hashlib.sha256(css.encode('utf-8')).digest()).decode('ascii')}'"
        for css in dict.fromkeys(styles)
    )
    allowed = hashes or "'none'"
    return (
        f"default-src 'none'; img-src data:; style-src {allowed}; font-src data:; form-action 'none'; base-uri 'none'"
    )


def _with_csp(page: str) -> str:
    """The page with its policy in the <head>'s meta: the hashes of the <style> elements of the head (the grader's;
    no student text reaches the head, and the sanitiser keeps no <style> in the body)."""
    head_end = page.index("<body")
    head = page[:head_end]
    policy = page_csp([m.group(1) for m in _STYLE_ELEMENT.finditer(head)])
    return head.replace(_CSP_PLACEHOLDER, policy, 1) + page[head_end:]


def _fenced(text: str) -> str:
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", text)), default=0))
    return f"{fence}text\n{text}\n{fence}"


def _student_view(cell: NotebookNode, index: int) -> NotebookNode | None:
    """A cell as a page shows it, rebuilt from its source and outputs (student_output): a raw cell becomes its
    text in a code block (nbconvert writes a raw cell's text into the page as HTML)."""
    kind = cell.get("cell_type")
    if kind not in ("code", "markdown", "raw"):
        return None
    source = text_of(cell.get("source", ""))
    if kind == "raw":
        new = nbformat.v4.new_markdown_cell(_fenced(source))
    else:
        new = rebuilt_cell(cell, source)
        new.metadata = {}
    if kind == "code":
        new.outputs = [o for o in (student_output(o) for o in cell.get("outputs") or []) if o is not None]
    new.id = f"cell-{index}"
    return new


def render_html(nb: NotebookNode, trusted_header: bool = False) -> str:
    """One self-contained HTML page: styles inlined, math rendered to MathML here, and
    no script, stylesheet, font or image fetched from anywhere (the page works offline
    and from an LMS upload). Every cell is shown as data (`_student_view`, `clean_html`); with
    `trusted_header`, a first cell made by `header_cell` is written above the notebook as it is."""
    cells = list(nb.cells)
    header = ""
    if trusted_header and cells and cells[0].cell_type == "raw" and cells[0].metadata.get(HEADER_KEY):
        header = cells.pop(0).source
    view = nbformat.v4.new_notebook(
        cells=[c for c in (_student_view(cell, i) for i, cell in enumerate(cells)) if c is not None],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
    )
    if header and isinstance(nb.metadata.get("title"), str):
        view.metadata["title"] = nb.metadata["title"]
    exporter = _exporter()
    exporter.budget = ConversionBudget(config.FEEDBACK_CONVERT_CPU_SECONDS)
    body, _ = exporter.from_notebook_node(
        view,
        resources={
            "autograder_header": header,
            "autograder_csp": _CSP_PLACEHOLDER,
            "autograder_contrast_css": contrast_css(),
        },
    )
    notes = exporter.budget.notes()
    if notes:
        body = body.replace(LATE_MARKER, "\n".join(f'<p class="ag-cut">{html.escape(n)}</p>' for n in notes), 1)
    return _with_csp(body)
