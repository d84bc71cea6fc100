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
import sys
from pathlib import Path

import nbformat
from nbformat import NotebookNode

from autograder import config
from autograder.collect import collect, notebooks_present
from autograder.execute import Result
from autograder.gradebook import executed_path, load_result
from autograder.notebooks import grade_id, is_test_cell, notebook_names, read, source_notebook
from autograder.release import released_path, secret_lines

MAX_MESSAGE_CHARS = 400


def _redact(text: str, hidden: set[str]) -> str:
    for line in sorted(hidden, key=len, reverse=True):
        text = text.replace(line, "[hidden test line]")
    if len(text) > MAX_MESSAGE_CHARS:
        text = text[:MAX_MESSAGE_CHARS] + " [...]"
    return text


def _md_escape(text: str) -> str:
    return html.escape(text).replace("|", "&#124;").replace("\n", " ")


def header_cell(result: Result) -> NotebookNode:
    lines = [
        f"# Feedback: {result.notebook}",
        "",
        f"Student **{result.student}**: **{result.score:g} / {result.max_score:g}** points.",
        "",
    ]
    if result.reason:
        lines += [f"**{_md_escape(result.reason)}**", ""]
    for note in result.notes:
        lines += [f"- Note: {_md_escape(note)}"]
    lines += ["", "| test | points | result |", "|---|---|---|"]
    for cell in result.cells:
        outcome = "passed" if cell.passed else _md_escape(cell.message or "failed")
        lines.append(f"| `{cell.grade_id}` | {cell.points:g} / {cell.max_points:g} | {outcome} |")
    lines += ["", "Below is your notebook as it was graded. Test cells show the visible part of their code and their result; hidden tests are not shown."]
    return nbformat.v4.new_markdown_cell("\n".join(lines))


def _error_summary(output: NotebookNode, hidden: set[str]) -> NotebookNode:
    text = _redact(f"{output.get('ename', 'Error')}: {output.get('evalue', '')}", hidden)
    return nbformat.v4.new_output("stream", name="stderr", text=text + "\n")


def feedback_notebook(result: Result, executed: NotebookNode | None, source: NotebookNode, released: NotebookNode) -> NotebookNode:
    """The notebook the student sees: header, then their graded notebook, sanitised."""
    hidden = secret_lines(source)
    # A result's messages come from running student code: redact them too.
    result = copy.deepcopy(result)
    for cell in result.cells:
        cell.message = _redact(cell.message, hidden)
    visible_source = {grade_id(c): c.source for c in released.cells if grade_id(c)}
    by_id = {c.grade_id: c for c in result.cells}
    cells = [header_cell(result)]
    tests_have_run = False
    for cell in (executed.cells if executed is not None else []):
        cell = copy.deepcopy(cell)
        if is_test_cell(cell):
            tests_have_run = True
            gid = grade_id(cell)
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
    nb = nbformat.v4.new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    return nb


def render_html(nb: NotebookNode) -> str:
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(template_name="lab")
    body, _ = exporter.from_notebook_node(nb)
    return body


def write_feedback(submissions_dir: Path, out_dir: Path, workdir: Path = config.DEFAULT_WORKDIR, solutions_dir: Path | None = None) -> list[Path]:
    """Write out_dir/<student>/<notebook>.html for every graded submission in the folder."""
    released_names = notebook_names(solutions_dir)
    written = []
    sources = {}
    for sub in collect(submissions_dir, notebooks_present(submissions_dir, released_names)):
        result = load_result(workdir, sub.student, sub.notebook)
        if result is None:
            print(f"warning: {sub.student}/{sub.notebook} is not graded yet (run `autograder grade` first); no feedback written", file=sys.stderr)
            continue
        if sub.notebook not in sources:
            source_path = source_notebook(sub.notebook, solutions_dir)
            sources[sub.notebook] = (read(source_path), read(released_path(source_path)))
        source, released = sources[sub.notebook]
        if result.submission_sha256 != sub.sha256:
            print(f"warning: {sub.student}/{sub.notebook} changed since it was graded (run `autograder grade` again); no feedback written", file=sys.stderr)
            continue
        exe_path = executed_path(workdir, sub.student, sub.notebook)
        executed = read(exe_path) if sub.problem is None and exe_path.exists() else None
        html_text = render_html(feedback_notebook(result, executed, source, released))
        target = Path(out_dir) / sub.student / f"{sub.notebook}.html"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(html_text, encoding="utf-8")
        written.append(target)
    return written
