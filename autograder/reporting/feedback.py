"""Per-student feedback HTML that never shows hidden test source.

This module decides what a student is shown of a graded notebook (the score and each test's result, their cells
and outputs within the page's bounds, messages redacted) as a notebook (`feedback_notebook`) or as plain text
(`student_message`); `feedback_page.render_html` makes the notebook one safe offline page.

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
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

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
from autograder.reporting.feedback_page import (
    HEADER_KEY,
    LATE_MARKER,
    rebuilt_cell,
    render_html,
    student_output,
    text_of,
)
from autograder.reporting.final import hand_changes, with_changes
from autograder.reporting.redact import redact
from autograder.store.gradebook import executed_path, load_result


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
        outcome = e(cell.message) if cell.message else ("passed" if cell.passed else "failed")
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
    lines = [redact(result.reason, hidden, config.MAX_MESSAGE_CHARS)] if result.reason else []
    if result.repairs:
        lines.append("What the grader repaired in your notebook before running it:")
        lines += [f"- {redact(note, hidden, config.MAX_MESSAGE_CHARS)}" for note in result.repairs]
    if not tests:
        return lines
    failed = [cell for cell in result.cells if not cell.passed]
    # a test that never ran carries the submission's reason, said once above
    told = [cell for cell in failed if not (result.reason and cell.message == result.reason)]
    if told:
        lines.append("Tests that failed:")
        lines += [
            f"- {cell.grade_id} ({cell.points:g}/{cell.max_points:g}): "
            f"{redact(cell.message or 'failed', hidden, config.MAX_MESSAGE_CHARS)}"
            for cell in told
        ]
    if len(told) < len(failed):
        lines.append(f"{len(failed) - len(told)} test(s) earned nothing for that reason.")
    elif result.cells and not failed:
        lines.append("Every test passed.")
    return lines


def _error_summary(output: NotebookNode, hidden: set[str]) -> NotebookNode:
    text = redact(f"{output.get('ename', 'Error')}: {output.get('evalue', '')}", hidden, config.MAX_MESSAGE_CHARS)
    return nbformat.v4.new_output("stream", name="stderr", text=text + "\n")


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
        graded.message = redact(graded.message, hidden, config.MAX_MESSAGE_CHARS)
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
        text = text_of(cell.get("source", ""))
        if is_judge_helpers_cell(cell):  # its body is hidden: the student's copy has only its comments
            text = visible_source.get(grade_id(cell), "# (judge helpers not shown)")
        if is_test_cell(cell):
            tests_have_run = True
            gid = grade_id(cell) or ""
            new = rebuilt_cell(cell, visible_source.get(gid, "# (test source not shown)"))
            outcome = by_id.get(gid)
            if outcome is None:
                line = "not graded"
            elif outcome.passed:
                line = f"PASSED ({outcome.points:g}/{outcome.max_points:g})" + (
                    f": {outcome.message}" if outcome.message else ""
                )
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
        new = rebuilt_cell(cell, text)
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


def write_feedback(
    submissions: Path | None,
    out_dir: Path,
    workdir: Path = config.DEFAULT_WORKDIR,
    solutions_dir: Path | None = None,
    out: TextIO | None = None,
    db_url: str | None = None,
) -> list[Path]:
    """Write out_dir/<student>/<notebook>.html for every graded submission of the intake `grade` laid out in the
    work dir (`submissions`, when given, must be the input `grade` was given: it is not laid out again). With
    `out`, one `[i/N]` line per page as it is written: a class of 300 takes minutes. The points are the final
    ones, the gradebook's changes by hand included (`reporting.final`), as the export and the report show them."""
    released_names = notebook_names(solutions_dir)
    intake = load(workdir)
    if intake is None:
        raise IntakeStateError(f"nothing was graded in the work dir {workdir}: run `autograder grade` first")
    intake.check_input(submissions, "feedback")
    written = []
    sources = {}
    found = collect(intake, notebooks_present(intake, released_names))
    changes = hand_changes(workdir, db_url)
    for done, sub in enumerate(found, 1):
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
        result = with_changes(result, changes)
        exe_path = executed_path(workdir, sub.student, sub.notebook)
        executed = read(exe_path) if sub.problem is None and exe_path.exists() else None
        html_text = render_html(feedback_notebook(result, executed, source, released), trusted_header=True)
        target = Path(out_dir) / sub.student / f"{sub.notebook}.html"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(html_text, encoding="utf-8")
        written.append(target)
        if out is not None:
            print(f"[{done:>{len(str(len(found)))}}/{len(found)}] {target}", file=out, flush=True)
    return written
