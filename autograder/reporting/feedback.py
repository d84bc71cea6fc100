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
import html
import re
import sys
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from autograder import config
from autograder.intake.collect import collect, notebooks_present
from autograder.intake.state import IntakeStateError, load
from autograder.model.notebooks import (
    grade_id,
    is_judge_helpers_cell,
    is_test_cell,
    notebook_names,
    read,
    released_path,
    secret_lines,
    source_notebook,
)
from autograder.model.records import Result
from autograder.records.gradebook import executed_path, load_result
from autograder.reporting.redact import redact

MAX_MESSAGE_CHARS = 400


def _md_escape(text: str) -> str:
    # `$` too: a message such as "cost $5, not $6" must not be rendered as a formula.
    return html.escape(text).replace("|", "&#124;").replace("$", "&#36;").replace("\n", " ")


def header_cell(result: Result) -> NotebookNode:
    lines = [
        f"# Feedback: {result.notebook}",
        "",
        f"Student **{result.student}**: **{result.score:g} / {result.max_score:g}** points.",
        "",
    ]
    if result.reason:
        lines += [f"**{_md_escape(result.reason)}**", ""]
    if result.repairs:
        lines += ["What the grader repaired in your notebook before running it:", ""]
    for note in result.repairs:
        lines += [f"- {_md_escape(note)}"]
    lines += ["", "| test | points | result |", "|---|---|---|"]
    for cell in result.cells:
        outcome = "passed" if cell.passed else _md_escape(cell.message or "failed")
        lines.append(f"| `{cell.grade_id}` | {cell.points:g} / {cell.max_points:g} | {outcome} |")
    lines += [
        "",
        "Below is your notebook as it was graded. Test cells show the visible part of their code and their result; "
        "hidden tests are not shown.",
    ]
    return nbformat.v4.new_markdown_cell("\n".join(lines))


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


def feedback_notebook(
    result: Result, executed: NotebookNode | None, source: NotebookNode, released: NotebookNode
) -> NotebookNode:
    """The notebook the student sees: header, then their graded notebook, sanitised."""
    hidden = secret_lines(source)
    # A result's messages come from running student code: redact them too.
    result = copy.deepcopy(result)
    for cell in result.cells:
        cell.message = redact(cell.message, hidden, MAX_MESSAGE_CHARS)
    visible_source = {grade_id(c): c.source for c in released.cells if grade_id(c)}
    by_id = {c.grade_id: c for c in result.cells}
    cells = [header_cell(result)]
    tests_have_run = False
    for cell in executed.cells if executed is not None else []:
        cell = copy.deepcopy(cell)
        if is_judge_helpers_cell(cell):  # its body is hidden: the student's copy has only its comments
            cell.source = visible_source.get(grade_id(cell), "# (judge helpers not shown)")
        if is_test_cell(cell):
            tests_have_run = True
            gid = grade_id(cell) or ""
            cell.source = visible_source.get(gid, "# (test source not shown)")
            outcome = by_id.get(gid)
            if outcome is None:
                text = "not graded"
            elif outcome.passed:
                text = f"PASSED ({outcome.points:g}/{outcome.max_points:g})"
            else:
                text = f"FAILED ({outcome.points:g}/{outcome.max_points:g}): {outcome.message}"
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text + "\n")]
        elif cell.cell_type == "code" and tests_have_run:
            cell.outputs = [_error_summary(o, hidden) for o in cell.outputs if o.output_type == "error"]
        cells.append(cell)
    nb = nbformat.v4.new_notebook(
        cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
    )
    return nb


# The page a student gets is one file, read offline: nbconvert's `lab` template, less
# everything it would fetch from another host (require.js, MathJax, mermaid and widget
# scripts, all from cdnjs/unpkg). Its CSS is inlined already.
_PAGE_TEMPLATE = "autograder_feedback.html.j2"
_PAGE_TEMPLATE_SOURCE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js -%}{%- endblock html_head_js -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block html_head_css -%}
<style type="text/css">
/* math is MathML, laid out by the browser; a font with an OpenType MATH table stretches
   brackets and roots (whichever the system has; nothing is downloaded) */
math { font-family: "STIX Two Math", "Cambria Math", "Latin Modern Math", "DejaVu Math TeX Gyre", math;
       font-size: 1.15em; }
math[display="block"] { display: block math; margin: 0.8em 0; overflow-x: auto; overflow-y: hidden; }
code.tex-source { white-space: pre-wrap; }
code.tex-source.tex-display { display: block; margin: 0.8em 0; }
</style>
{%- endblock html_head_css -%}
{% block data_latex scoped %}
<div class="jp-RenderedLatex jp-OutputArea-output {{ extra_class }}" data-mime-type="text/latex">
{{ output.data['text/latex'] | latex2mathml }}
</div>
{%- endblock data_latex %}
"""

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


def _exporter():
    from jinja2 import DictLoader, pass_context
    from nbconvert import HTMLExporter
    from nbconvert.filters.markdown_mistune import MarkdownWithMath

    renderer_class = _mathml_renderer_class()

    class FeedbackExporter(HTMLExporter):
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
            return MarkdownWithMath(renderer=renderer).render(source)

        def default_filters(self):
            yield from super().default_filters()
            yield ("latex2mathml", _latex_output_to_mathml)

    return FeedbackExporter(
        template_name="lab",
        template_file=_PAGE_TEMPLATE,
        extra_loaders=[DictLoader({_PAGE_TEMPLATE: _PAGE_TEMPLATE_SOURCE})],
    )


def render_html(nb: NotebookNode) -> str:
    """One self-contained HTML page: styles inlined, math rendered to MathML here, and
    no script, stylesheet, font or image fetched from anywhere (the page works offline
    and from an LMS upload)."""
    body, _ = _exporter().from_notebook_node(nb)
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
            source_path = source_notebook(sub.notebook, solutions_dir)
            sources[sub.notebook] = (read(source_path), read(released_path(source_path)))
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
        html_text = render_html(feedback_notebook(result, executed, source, released))
        target = Path(out_dir) / sub.student / f"{sub.notebook}.html"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(html_text, encoding="utf-8")
        written.append(target)
    return written
