"""Per-student feedback HTML that never shows hidden test source.

nbgrader's own feedback renders the executed notebook, hidden test cells and their
tracebacks included, for every student. Here a test cell shows the source the
student was given (from the released notebook) and one line: passed, or the name
and message of the exception that failed it. Tracebacks of test cells are never
shown: they quote the hidden lines.

Student code that runs after hidden tests have run could read them (IPython keeps
every executed cell in `In`) and print them. So outputs are shown only for cells
that ran before the first test cell; after that, only error names and messages,
shortened, with any line of hidden test source redacted.
"""

from __future__ import annotations

import copy
import functools
import html
import re
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from autograder import config
from autograder.grading.execute import NOT_KEPT_KEY  # an output the grader did not keep
from autograder.intake.collect import collect, notebooks_present
from autograder.intake.state import IntakeStateError, load
from autograder.model.notebooks import (
    grade_id,
    is_judge_helpers_cell,
    is_test_cell,
    notebook_names,
    read,
    release_notebook,
    secret_lines,
    source_notebook,
)
from autograder.model.records import Result
from autograder.reporting.redact import redact
from autograder.reporting.sanitize import clean_html, valid_base64
from autograder.store.gradebook import executed_path, load_result

MAX_MESSAGE_CHARS = 400


@dataclass
class Cuts:
    """What a feedback page leaves out of the graded notebook, said at its top."""

    cells: int = 0  # cells not shown (past the page's cells or characters)
    outputs: int = 0  # outputs not shown (too large, or past the page's characters)
    output_chars: int = 0
    kept_by_grader: int = 0  # outputs the grader itself did not keep (grading/execute.py)

    def lines(self) -> list[str]:
        said = []
        if self.kept_by_grader:
            said.append(
                f"{self.kept_by_grader:,} output(s) of your notebook were too large to keep when it was graded (the "
                f"grader keeps {config.MAX_DISPLAY_OUTPUT_CHARS:,} characters per output and "
                f"{config.MAX_NOTEBOOK_OUTPUT_CHARS:,} per notebook); each is marked where it was."
            )
        if self.outputs:
            said.append(
                f"{self.outputs:,} output(s) ({self.output_chars:,} characters) are not shown: this page shows at most "
                f"{config.MAX_DISPLAY_OUTPUT_CHARS:,} characters per output and {config.FEEDBACK_MAX_CHARS:,} in all."
            )
        if self.cells:
            said.append(
                f"{self.cells:,} of your cells are not shown: this page shows at most {config.FEEDBACK_MAX_CELLS:,} "
                f"cells and {config.FEEDBACK_MAX_CHARS:,} characters (every test is still listed above)."
            )
        return said


HEADER_KEY = "autograder_feedback_header"  # the metadata that marks the header cell feedback_notebook makes
LATE_MARKER = "<!-- autograder: markdown shown as text -->"  # render_html says there what it could not render


def header_cell(result: Result, cuts: Cuts | None = None) -> NotebookNode:
    """The score and the tests' results, as HTML written here (every text escaped): render_html puts it at the
    top of the page, outside the notebook, where nothing a student wrote can reach or cover it."""
    e = html.escape
    parts = [
        f"<h1>Feedback: {e(result.notebook)}</h1>",
        f'<p class="ag-score">Student <strong>{e(result.student)}</strong>: '
        f"<strong>{result.score:g} / {result.max_score:g}</strong> points.</p>",
    ]
    if result.reason:
        parts.append(f"<p><strong>{e(result.reason)}</strong></p>")
    if result.repairs:
        parts.append("<p>What the grader repaired in your notebook before running it:</p>")
        parts.append("<ul>" + "".join(f"<li>{e(note)}</li>" for note in result.repairs) + "</ul>")
    rows = []
    for cell in result.cells:
        outcome = "passed" if cell.passed else e(cell.message or "failed")
        rows.append(
            f"<tr><td><code>{e(cell.grade_id)}</code></td><td>{cell.points:g} / {cell.max_points:g}</td>"
            f"<td>{outcome}</td></tr>"
        )
    parts.append(
        '<table class="ag-tests"><thead><tr><th scope="col">test</th><th scope="col">points</th>'
        f'<th scope="col">result</th></tr></thead><tbody>{"".join(rows)}</tbody></table>'
    )
    for line in (cuts or Cuts()).lines():
        parts.append(f'<p class="ag-cut">{e(line)}</p>')
    parts.append(LATE_MARKER)
    parts.append(
        "<p>Below is your notebook as it was graded. Test cells show the visible part of their code and their "
        "result; hidden tests are not shown.</p>"
    )
    return nbformat.v4.new_raw_cell("\n".join(parts), metadata={HEADER_KEY: True})


def student_message(result: Result, hidden: set[str], tests: bool = True) -> list[str]:
    """What a student is told about one graded notebook in plain text (an LMS's feedback comment, Gradescope's
    output): why it could not run to the end, what the grader repaired, and (`tests`) each failed test's message,
    every line of hidden test source redacted. The score itself is left to the caller (the LMS shows it)."""
    lines = [redact(result.reason, hidden, MAX_MESSAGE_CHARS)] if result.reason else []
    if result.repairs:
        lines.append("What the grader repaired in your notebook before running it:")
        lines += [f"- {redact(note, hidden, MAX_MESSAGE_CHARS)}" for note in result.repairs]
    if not tests:
        return lines
    failed = [cell for cell in result.cells if not cell.passed]
    # a test that never ran carries the submission's reason, said once above
    told = [cell for cell in failed if not (result.reason and cell.message == result.reason)]
    if told:
        lines.append("Tests that failed:")
        lines += [
            f"- {cell.grade_id} ({cell.points:g}/{cell.max_points:g}): "
            f"{redact(cell.message or 'failed', hidden, MAX_MESSAGE_CHARS)}"
            for cell in told
        ]
    if len(told) < len(failed):
        lines.append(f"{len(failed) - len(told)} test(s) earned nothing for that reason.")
    elif result.cells and not failed:
        lines.append("Every test passed.")
    return lines


def _error_summary(output: NotebookNode, hidden: set[str]) -> NotebookNode:
    text = redact(f"{output.get('ename', 'Error')}: {output.get('evalue', '')}", hidden, MAX_MESSAGE_CHARS)
    return nbformat.v4.new_output("stream", name="stderr", text=text + "\n")


# What a page shows of a display output: MathML, sanitised HTML and Markdown, inline PNG and JPEG, text. Not
# JavaScript, SVG (it can hold scripts and remote loads), widgets or anything else.
SHOWN_MIME_TYPES = ("text/html", "text/markdown", "text/latex", "image/png", "image/jpeg", "text/plain")
MAX_IMAGE_PIXELS = 4000


def _text(value) -> str:
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
        return nbformat.v4.new_output("stream", name=name, text=_text(output.get("text", "")))
    if kind == "error":
        return nbformat.v4.new_output(
            "error",
            ename=_text(output.get("ename", "Error")),
            evalue=_text(output.get("evalue", "")),
            traceback=[_text(line) for line in output.get("traceback") or []],
        )
    if kind not in ("display_data", "execute_result"):
        return None
    data = output.get("data") or {}
    kept = {}
    for mime in SHOWN_MIME_TYPES:
        if mime in data:
            value = _text(data[mime])
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


def _output_chars(output: NotebookNode) -> int:
    if output.output_type == "stream":
        return len(output.text)
    if output.output_type == "error":
        return len(output.evalue) + sum(len(line) for line in output.traceback)
    return sum(len(value) for value in output.data.values())


def _not_shown(chars: int) -> NotebookNode:
    return nbformat.v4.new_output(
        "stream", name="stderr", text=f"[an output of {chars:,} characters is not shown on this page]\n"
    )


def _attachments(cell) -> dict:
    """A Markdown cell's attached images, PNG and JPEG only."""
    kept = {}
    for name, bundle in (cell.get("attachments") or {}).items():
        images = {m: _text(v) for m, v in (bundle or {}).items() if m in ("image/png", "image/jpeg")}
        images = {m: v for m, v in images.items() if valid_base64(v)}
        if images:
            kept[str(name)] = images
    return kept


def _new_cell(cell, source: str) -> NotebookNode:
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


def feedback_notebook(
    result: Result, executed: NotebookNode | None, source: NotebookNode, released: NotebookNode
) -> NotebookNode:
    """The notebook the student sees: header, then their graded notebook, sanitised and bounded.

    Every test cell is kept; the student's cells and outputs are shown while the page's bounds last
    (config.FEEDBACK_MAX_CELLS, FEEDBACK_MAX_CHARS; MAX_DISPLAY_OUTPUT_CHARS per output), and the header says
    what was left out. Rendering costs about 10 ms a cell: a notebook of 50,000 cells took minutes."""
    hidden = secret_lines(source)
    # A result's messages come from running student code: redact them too.
    result = copy.deepcopy(result)
    for graded in result.cells:
        graded.message = redact(graded.message, hidden, MAX_MESSAGE_CHARS)
    visible_source = {grade_id(c): c.source for c in released.cells if grade_id(c)}
    by_id = {c.grade_id: c for c in result.cells}
    cuts = Cuts()
    cells = []
    shown_cells = chars = 0
    tests_have_run = False
    for cell in executed.cells if executed is not None else []:
        if cell.get("cell_type") not in ("code", "markdown", "raw"):
            continue
        ours = is_test_cell(cell) or is_judge_helpers_cell(cell)
        text = _text(cell.get("source", ""))
        if is_judge_helpers_cell(cell):  # its body is hidden: the student's copy has only its comments
            text = visible_source.get(grade_id(cell), "# (judge helpers not shown)")
        if is_test_cell(cell):
            tests_have_run = True
            gid = grade_id(cell) or ""
            new = _new_cell(cell, visible_source.get(gid, "# (test source not shown)"))
            outcome = by_id.get(gid)
            if outcome is None:
                line = "not graded"
            elif outcome.passed:
                line = f"PASSED ({outcome.points:g}/{outcome.max_points:g})"
            else:
                line = f"FAILED ({outcome.points:g}/{outcome.max_points:g}): {outcome.message}"
            new.outputs = [nbformat.v4.new_output("stream", name="stdout", text=line + "\n")]
            cells.append(new)
            continue
        if not ours:
            if shown_cells >= config.FEEDBACK_MAX_CELLS or chars + len(text) > config.FEEDBACK_MAX_CHARS:
                cuts.cells += 1
                continue
            shown_cells += 1
            chars += len(text)
        new = _new_cell(cell, text)
        if cell.cell_type == "code":
            outputs = cell.get("outputs") or []
            cuts.kept_by_grader += sum(1 for o in outputs if NOT_KEPT_KEY in (o.get("metadata") or {}))
            if tests_have_run:
                new.outputs = [_error_summary(o, hidden) for o in outputs if o.get("output_type") == "error"]
            else:
                for output in outputs:
                    shown = student_output(output)
                    if shown is None:
                        continue
                    size = _output_chars(shown)
                    if size > config.MAX_DISPLAY_OUTPUT_CHARS or chars + size > config.FEEDBACK_MAX_CHARS:
                        cuts.outputs += 1
                        cuts.output_chars += size
                        shown = _not_shown(size)
                    else:
                        chars += size
                    new.outputs.append(shown)
        cells.append(new)
    nb = nbformat.v4.new_notebook(
        cells=[header_cell(result, cuts)] + cells,
        metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
            "title": f"Feedback: {result.notebook}",
        },
    )
    return nb


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
/* a formula wider than a phone scrolls in a box a keyboard can reach (_scrolling_formulas) */
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
# code picks (nbconvert writes it as an inline style) cannot be checked in advance: such text takes the colour of
# the text around it.
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
        ".jp-RenderedText pre span[style] { color: inherit !important; background-color: transparent !important; }",
        _scheme_css("light"),
    ]
    return "\n".join(light) + "\n@media (prefers-color-scheme: dark) {\n" + _scheme_css("dark") + "\n}"


_CHAR_REF = re.compile(r"&#x([0-9A-Fa-f]+);")
_TEX_COMMAND = re.compile(r"\\[A-Za-z]+")
# latex2mathml puts an unknown command verbatim into a token element (`<mi>\foo</mi>`).
_TOKEN_ELEMENTS = {"mi", "mo", "mn", "ms"}


def _tex_source(tex: str, display: bool) -> str:
    """What is shown for a formula that cannot be converted: its TeX, as code."""
    kind = "tex-source tex-display" if display else "tex-source"
    return f'<code class="{kind}" title="formula not rendered">{html.escape(tex.strip())}</code>'


def tex_to_mathml(tex: str, display: bool = False) -> str:
    """MathML (rendered natively by browsers) for one TeX formula, without its delimiters.

    Falls back to the TeX source in a <code> element when latex2mathml cannot convert
    it, reports an error, or leaves a command it does not know as text."""
    from xml.etree.ElementTree import tostring

    from latex2mathml.converter import convert_to_element

    source = tex.strip()
    if not source:
        return _tex_source(tex, display)
    try:
        root = convert_to_element(source, display="block" if display else "inline")
    except Exception:  # noqa: BLE001 - latex2mathml raises many kinds of error on malformed TeX
        return _tex_source(tex, display)
    # latex2mathml stores character references (`&#x0003D;`) and the raw text of \text{}
    # in the tree and serialises it unescaped; decode the references and let
    # ElementTree escape everything, so `\text{a<b}` cannot break (or inject into) the page.
    for element in root.iter():
        if element.tag == "merror":
            return _tex_source(tex, display)
        for attr in ("text", "tail"):
            value = getattr(element, attr)
            if value:
                setattr(element, attr, _CHAR_REF.sub(lambda m: chr(int(m.group(1), 16)), value))
        if element.tag in _TOKEN_ELEMENTS and element.text and _TEX_COMMAND.search(element.text):
            return _tex_source(tex, display)
    return tostring(root, encoding="unicode", short_empty_elements=False)


def _mathml_renderer_class():
    from nbconvert.filters.markdown_mistune import IPythonRenderer

    class MathMLRenderer(IPythonRenderer):
        """nbconvert's markdown renderer, with math converted to MathML instead of being
        left as `$...$` for MathJax. Only what mistune parsed as math is converted, so
        dollar signs in inline code, fenced code and code cells are left alone."""

        def block_math(self, body: str) -> str:
            return tex_to_mathml(body, display=True)

        def inline_math(self, body: str) -> str:
            return tex_to_mathml(body, display=False)

        def latex_environment(self, name: str, body: str) -> str:
            return tex_to_mathml(f"\\begin{{{name}}}{body}\\end{{{name}}}", display=True)

        def multiline_math(self, text: str) -> str:  # mistune 2 only: a whole `$$...$$` paragraph
            return _latex_output_to_mathml(text)

    return MathMLRenderer


_DISPLAY_MATH = re.compile(r'<math\b[^>]*\bdisplay="block"[^>]*>.*?</math>', re.S)


def _scrolling_formulas(html_text: str) -> str:
    """Each display formula in a box that scrolls sideways and takes keyboard focus (tabindex): a formula wider
    than a phone's screen can then be read with the arrow keys too (WCAG 2.1.1; axe's scrollable-region-focusable).
    Applied to HTML after it is sanitised (which keeps no tabindex of a student's), to formulas only."""
    return _DISPLAY_MATH.sub(lambda m: f'<div class="ag-formula" tabindex="0">{m.group(0)}</div>', html_text)


def _latex_output_to_mathml(latex: str) -> str:
    """A `text/latex` output (`$...$`, `$$...$$`, `\\[...\\]` or an environment) as MathML."""
    text = latex.strip()
    for left, right, display in (("$$", "$$", True), ("\\[", "\\]", True), ("$", "$", False), ("\\(", "\\)", False)):
        if text.startswith(left) and text.endswith(right) and len(text) > len(left) + len(right):
            inner = text[len(left) : -len(right)]
            if left.startswith("$") and re.search(r"(?<!\\)\$", inner):  # several formulas, or text and math
                return _tex_source(text, display=True)
            return tex_to_mathml(inner, display=display)
    return tex_to_mathml(text, display=True)


class _RenderTimeout(Exception):
    """The page's time to render Markdown ran out."""


@contextmanager
def _time_limit(seconds: float | None) -> Iterator[None]:
    """_RenderTimeout in the block after `seconds`: mistune takes minutes on some inputs (`[` * 50,000). Only in
    the main thread (signals); elsewhere the deadline is checked between cells."""
    if seconds is None or threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_alarm(signum, frame):
        raise _RenderTimeout

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _unchanged(text: str) -> str:
    return text


def _as_text(source: str) -> str:
    return f"<pre>{html.escape(source)}</pre>"


def _exporter():
    from jinja2 import DictLoader, pass_context
    from nbconvert import HTMLExporter
    from nbconvert.filters.markdown_mistune import MarkdownWithMath

    renderer_class = _mathml_renderer_class()

    class FeedbackExporter(HTMLExporter):
        deadline: float | None = None  # time.monotonic() after which Markdown is shown as text
        late = 0  # Markdown cells and outputs shown as text because the time ran out

        @pass_context
        def markdown2html(self, context, source):
            left = None if self.deadline is None else self.deadline - time.monotonic()
            if left is not None and left <= 0:
                self.late += 1
                return _as_text(source)
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
            try:
                with _time_limit(left):
                    rendered = MarkdownWithMath(renderer=renderer).render(source)
            except _RenderTimeout:
                self.late += 1
                return _as_text(source)
            # Markdown is HTML: a student's cell or Markdown output is sanitised after rendering (formulas included)
            return _scrolling_formulas(clean_html(rendered))

        def default_filters(self):
            yield from super().default_filters()
            yield ("latex2mathml", lambda latex: _scrolling_formulas(_latex_output_to_mathml(latex)))
            yield ("clean_student_html", clean_html)
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


# The page runs no script and loads nothing (its images are data: URLs, its style inline): a second line
# behind the sanitiser, for the browsers that read it.
PAGE_CSP = (
    "default-src 'none'; img-src data:; style-src 'unsafe-inline'; font-src data:; form-action 'none'; base-uri 'none'"
)


def _fenced(text: str) -> str:
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", text)), default=0))
    return f"{fence}text\n{text}\n{fence}"


def _student_view(cell: NotebookNode, index: int) -> NotebookNode | None:
    """A cell as a page shows it, rebuilt from its source and outputs (student_output): a raw cell becomes its
    text in a code block (nbconvert writes a raw cell's text into the page as HTML)."""
    kind = cell.get("cell_type")
    if kind not in ("code", "markdown", "raw"):
        return None
    source = _text(cell.get("source", ""))
    if kind == "raw":
        new = nbformat.v4.new_markdown_cell(_fenced(source))
    else:
        new = _new_cell(cell, source)
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
    exporter.deadline = time.monotonic() + config.FEEDBACK_MARKDOWN_SECONDS
    body, _ = exporter.from_notebook_node(
        view,
        resources={"autograder_header": header, "autograder_csp": PAGE_CSP, "autograder_contrast_css": contrast_css()},
    )
    if exporter.late:
        note = (
            f'<p class="ag-cut">{exporter.late:,} Markdown cell(s) or output(s) are shown as plain text: this page had '
            f"{config.FEEDBACK_MARKDOWN_SECONDS} s to render Markdown.</p>"
        )
        body = body.replace(LATE_MARKER, note, 1)
    return body


def write_feedback(
    submissions: Path | None,
    out_dir: Path,
    workdir: Path = config.DEFAULT_WORKDIR,
    solutions_dir: Path | None = None,
) -> list[Path]:
    """Write out_dir/<student>/<notebook>.html for every graded submission of the intake `grade` laid out in the
    work dir (`submissions`, when given, must be the input `grade` was given: it is not laid out again)."""
    released_names = notebook_names(solutions_dir)
    intake = load(workdir)
    if intake is None:
        raise IntakeStateError(f"nothing was graded in the work dir {workdir}: run `autograder grade` first")
    intake.check_input(submissions, "feedback")
    written = []
    sources = {}
    for sub in collect(intake, notebooks_present(intake, released_names)):
        result = load_result(workdir, sub.student, sub.notebook)
        if result is None:
            print(
                f"warning: {sub.student}/{sub.notebook} is not graded yet (run `autograder grade` first); no "
                "feedback written",
                file=sys.stderr,
            )
            continue
        if sub.notebook not in sources:
            source = read(source_notebook(sub.notebook, solutions_dir))
            sources[sub.notebook] = (source, release_notebook(source))  # what `release` gave the student
        source, released = sources[sub.notebook]
        if result.submission_sha256 != sub.sha256:
            print(
                f"warning: {sub.student}/{sub.notebook} changed since it was graded (run `autograder grade` again); "
                "no feedback written",
                file=sys.stderr,
            )
            continue
        exe_path = executed_path(workdir, sub.student, sub.notebook)
        executed = read(exe_path) if sub.problem is None and exe_path.exists() else None
        html_text = render_html(feedback_notebook(result, executed, source, released), trusted_header=True)
        target = Path(out_dir) / sub.student / f"{sub.notebook}.html"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(html_text, encoding="utf-8")
        written.append(target)
    return written
