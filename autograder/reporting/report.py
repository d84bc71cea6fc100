"""The class report: one static HTML page per graded notebook, for the instructor.

Built from the work dir only (result records and executed notebooks), never by grading
again. Each page is one file that works offline: plots are PNGs (matplotlib, Agg) inlined
as data: URLs, the style is inline, there is no script and nothing is fetched.

What a page shows: the score distribution, the pass rate of every graded cell (hardest
first), the most frequent failure messages of each cell with their counts, each linking
to the answer code of one student who failed that way (anonymised: "student A"), the
submissions that could not be graded normally and the repairs the grader made, late
submissions and their penalty, pairs of unusually similar answers, and the result of the
last `grade --verify`. Failure messages and answer code come from running or reading
student code: any line of hidden test source in them is redacted, as in the feedback.

This module renders the page; the numbers and texts it shows come as records from `reporting.statistics`
(which never imports this one). Every text from a student or their code is escaped here (`_e`, `_code`): the
page's own markup is the only markup in it.
"""

from __future__ import annotations

import base64
import html
import io
import time
from collections import defaultdict
from pathlib import Path
from typing import TextIO

from autograder import config
from autograder.errors import MissingInput
from autograder.model.records import Result
from autograder.reporting import similarity
from autograder.reporting.final import hand_changes, with_changes
from autograder.reporting.statistics import (
    CellRate,
    ClassStatistics,
    CourseCopy,
    Example,
    LateWork,
    Scores,
    VerifyRun,
    class_statistics,
)
from autograder.store.gradebook import atomic_write, load_results

# Light and dark (the reader's system setting, `prefers-color-scheme`): every text colour 4.5:1 or more against
# the backgrounds it sits on (WCAG 2.1 AA; tests/test_report.py runs axe-core on the page in both). The plots
# are PNGs on white in both schemes.
_STYLE = """
:root { color-scheme: light dark; --text: #222; --page: #fff; --line: #ccc; --head: #f3f3f3; --code: #f7f7f7;
        --note: #555; --flag: #a40000; --link: #0645ad; --visited: #6b2c91; }
@media (prefers-color-scheme: dark) {
  :root { --text: #e8e8e8; --page: #121212; --line: #555; --head: #2a2a2a; --code: #1e1e1e;
          --note: #b8b8b8; --flag: #ff8a80; --link: #8cb8ff; --visited: #d2a8ff; }
}
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 70em; padding: 0 1em; color: var(--text);
       background: var(--page); }
a:link { color: var(--link); } a:visited { color: var(--visited); }
h1 { font-size: 1.6em; } h2 { font-size: 1.3em; margin-top: 2em; border-bottom: 1px solid var(--line); }
table { border-collapse: collapse; margin: 0.5em 0 1em; }
td, th { border: 1px solid var(--line); padding: 0.25em 0.6em; vertical-align: top; text-align: left; }
th { background: var(--head); } td.num { text-align: right; font-variant-numeric: tabular-nums; }
td, th { overflow-wrap: break-word; }
/* a table wider than the screen (a phone's) scrolls sideways in its own box: _scrolling_tables */
div.wide { overflow-x: auto; max-width: 100%; }
pre { background: var(--code); padding: 0.6em; overflow-x: auto; font-size: 0.9em; margin: 0; }
.side { display: grid; grid-template-columns: repeat(auto-fit, minmax(min(100%, 22em), 1fr)); gap: 0.5em; }
.note { color: var(--note); font-size: 0.95em; } .flag { color: var(--flag); font-weight: bold; }
img { max-width: 100%; height: auto; background: #fff; }
"""
# The plots' colours: Okabe and Ito's palette (told apart under the common colour-vision deficiencies), and never
# colour alone: cells that fewer than half the class pass are hatched too, and the legend says so.
BLUE, VERMILLION = "#0072B2", "#D55E00"
# Inches at the PNGs' 90 dpi: 450 px, so the plots' 10-point text is still 10 px high on a 390 px phone.
FIGURE_WIDTH = 5.0
ALT_CELLS = 12  # cells named in the pass-rate chart's alt text (every one is in the table below it)


def _e(text) -> str:
    return html.escape(str(text))


def _header(*names: str) -> str:
    """A table's row of column headers."""
    return "<tr>" + "".join(f"<th scope='col'>{name}</th>" for name in names) + "</tr>"


def _scrolling_tables(page: str) -> str:
    """Each table in a box that scrolls sideways and takes keyboard focus, like `_code`. Every `<table` in the
    page is the report's own: student text is escaped (`&lt;table`)."""
    return page.replace("<table", "<div class='wide' tabindex='0'><table").replace("</table>", "</table></div>")


def _code(text: str) -> str:
    """Code in a box that scrolls sideways and takes keyboard focus (WCAG 2.1.1: a keyboard can scroll it)."""
    return f"<pre tabindex='0'>{_e(text)}</pre>"


def _png(fig) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _plots(results: list[Result], rates: list[tuple[str, float]]) -> tuple[str, str]:
    """(histogram, pass-rate bar chart) as data: URLs."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    from matplotlib.figure import Figure  # no pyplot: no global state, no GUI

    max_score = max((r.max_score for r in results), default=1) or 1
    fig = Figure(figsize=(FIGURE_WIDTH, 3), layout="constrained")
    ax = fig.subplots()
    scores = [r.score for r in results]
    bins = min(20, int(max_score) + 1) if max_score == int(max_score) else 20
    ax.hist(scores, bins=bins, range=(0, max_score), color=BLUE, edgecolor="white")
    ax.set_xlabel(f"score (of {max_score:g})")
    ax.set_ylabel("submissions")
    ax.set_title(f"Score distribution ({len(results)} submissions)")
    histogram = _png(fig)

    fig = Figure(figsize=(FIGURE_WIDTH, 1.4 + 0.35 * max(1, len(rates))), layout="constrained")
    ax = fig.subplots()
    names = [name for name, _ in rates][::-1]  # hardest at the top
    values = [100 * rate for _, rate in rates][::-1]
    hard = [v < 50 for v in values]
    ax.barh(
        names,
        values,
        color=[VERMILLION if h else BLUE for h in hard],
        hatch=["//" if h else "" for h in hard],
        edgecolor="white",
    )
    from matplotlib.patches import Patch

    fig.legend(
        handles=[
            Patch(facecolor=VERMILLION, hatch="//", edgecolor="white", label="under half pass"),
            Patch(facecolor=BLUE, label="half or more pass"),
        ],
        loc="outside lower center",
        ncols=2,
    )
    ax.set_xlim(0, 100)
    ax.set_xlabel("% of submissions passing")
    ax.set_title("Pass rate per graded cell (hardest first)")
    bars = _png(fig)
    return histogram, bars


def _histogram_alt(scores: Scores) -> str:
    return (
        f"Histogram of the scores of {scores.submissions} submission(s), from 0 to {scores.total:g}: mean "
        f"{scores.mean:.2f}, {scores.full_marks} with full marks, {scores.zero} with none."
    )


def _rates_alt(rates: list[tuple[str, float]]) -> str:
    shown = "; ".join(f"{cell} {100 * rate:.0f}%" for cell, rate in rates[:ALT_CELLS])
    rest = f"; {len(rates) - ALT_CELLS} more in the table below" if len(rates) > ALT_CELLS else ""
    return f"Bar chart of the share of submissions passing each graded cell, hardest first: {shown}{rest}."


def _letters(n: int) -> str:
    """0 -> A, 25 -> Z, 26 -> AA: the n-th anonymous student's letters."""
    letters = ""
    while True:
        letters = chr(ord("A") + n % 26) + letters
        n = n // 26 - 1
        if n < 0:
            return letters


def _labels(examples: tuple[Example, ...]) -> dict[str, str]:
    """{student: "student A"}, lettered in the order the failure table first links them (not the gradebook's)."""
    return {example.student: f"student {_letters(i)}" for i, example in enumerate(examples)}


def _anchor(label: str) -> str:
    return "ex-" + label.split()[-1]


def _summary(stats: ClassStatistics) -> str:
    scores = stats.scores
    return (
        f"<p>{scores.submissions} submission(s), mean {scores.mean:.2f} / {scores.total:g}, "
        f"{scores.full_marks} full marks, {scores.with_reason} not graded normally. "
        f"Built {time.strftime('%Y-%m-%d %H:%M')} from the work dir, without grading again.</p>"
    )


def _cell_rows(cell: CellRate, labels: dict[str, str]) -> list[str]:
    """A graded cell's rows of the failure table: its pass rate, then one row per listed failure message with
    its count and a link to an example answer, then the messages not listed."""
    cid = _e(cell.grade_id)
    rows = cell.failures or (None,)
    out = []
    for j, failure in enumerate(rows):
        first = (
            f"<td rowspan='{len(rows)}'><code>{cid}</code></td><td rowspan='{len(rows)}' "
            f"class='num'>{cell.passed}/{cell.submissions} ({100 * cell.rate:.0f}%)</td>"
            if j == 0
            else ""
        )
        link = ""
        if failure is not None and failure.example is not None:
            who = labels[failure.example]
            link = f"<a href='#{_anchor(who)}'>{_e(who)}</a>"
        shown = _e(failure.message) if failure is not None else "all passed"
        count = failure.count if failure is not None else ""
        out.append(
            f"<tr data-cell='{cid}'>{first}<td class='msg'>{shown}</td><td class='num count'>{count}</td>"
            f"<td>{link}</td></tr>"
        )
    if cell.other_messages:
        out.append(
            f"<tr data-cell='{cid}'><td colspan='2'></td><td "
            f"class='note'>{cell.other_messages} other message(s)</td>"
            f"<td class='num count'>{cell.other_count}</td><td></td></tr>"
        )
    return out


def _failure_table(stats: ClassStatistics, labels: dict[str, str]) -> str:
    rows = [row for cell in stats.cells for row in _cell_rows(cell, labels)]
    head = "<table id='failures'>" + _header("cell", "pass rate", "failure message", "students", "example")
    return "\n".join([head, *rows, "</table>"])


def _not_graded_section(stats: ClassStatistics) -> str:
    if not stats.not_graded:
        return "<p>None: every notebook ran to the end.</p>"
    rows = [
        f"<tr><td>{_e(r.student)}</td><td class='num'>{r.score:g}</td><td>{_e(r.reason)}</td></tr>"
        for r in stats.not_graded
    ]
    return "\n".join(["<table id='reasons'>" + _header("student", "score", "reason"), *rows, "</table>"])


def _repairs_section(stats: ClassStatistics) -> str:
    if not stats.repaired:
        return "<p>None.</p>"
    rows = []
    for r in stats.repaired:
        items = "".join(f"<li>{_e(x)}</li>" for x in r.repairs)
        rows.append(f"<tr><td>{_e(r.student)}</td><td><ul>{items}</ul></td></tr>")
    return "\n".join(["<table id='repairs'>" + _header("student", "repairs"), *rows, "</table>"])


def _late_section(lateness: LateWork | None) -> str:
    if lateness is None:
        return (
            "<p class='note'>No deadline was given to <code>grade</code> (<code>--deadline</code>): "
            "lateness not checked.</p>"
        )
    out = [
        f"<p>Deadline {_e(lateness.deadline)}, policy <code>{_e(lateness.policy)}</code>: "
        f"{len(lateness.late)} of {lateness.checked} submission(s) late.</p>"
    ]
    if lateness.late:
        out.append(
            "<table>" + _header("student", "submitted", "time from", "late days", "penalty", "raw score", "final score")
        )
        for late in lateness.late:
            record = late.record
            out.append(
                f"<tr><td>{_e(late.student)}</td><td>{_e(record.submitted_at)}</td><td>{_e(record.source)}</td>"
                f"<td class='num'>{record.late_days}</td><td class='num'>{100 * record.penalty:g}%</td>"
                f"<td class='num'>{late.score:g}</td><td class='num'>{record.final_score:g}</td></tr>"
            )
        out.append("</table>")
    return "\n".join(out)


def _verify_section(verify: VerifyRun | None) -> str:
    if verify is None:
        return (
            "<p class='note'>Not checked: <code>grade --verify FRACTION</code> grades a sample again and lists here "
            "any per-cell difference.</p>"
        )
    differ = verify.differ
    out = [
        f"<p>Last run {_e(verify.when)}: {len(verify.checked)} submission(s) graded again in a fresh sandbox "
        f"(sample fraction {verify.fraction}, seed {verify.seed}); "
        + (f"<span class='flag'>{len(differ)} with different per-cell points</span>" if differ else "all identical")
        + ".</p>"
    ]
    if differ:
        out.append("<table>" + _header("student", "cell", "first run", "second run"))
        for c in differ:
            for d in c.differences:
                out.append(
                    f"<tr><td>{_e(c.student)}</td><td>{_e(d.cell)}</td><td class='num'>{d.first:g}</td><td "
                    f"class='num'>{d.second:g}</td></tr>"
                )
        out.append("</table>")
    return "\n".join(out)


def _course_copy_section(copies: tuple[CourseCopy, ...]) -> str:
    out = [
        f"<p class='note'>Each answer cell compared with every function and class the course publishes at some point "
        f"of the term (course/*.py, the lessons' code), answers included: a cell that holds at least "
        f"{similarity.COURSE_FLAG:.0%} of a piece's distinctive fingerprints is listed (names, comments and the "
        "released "
        "starter code do not count). A reason to read the answer, never a verdict. The same list is the export's "
        "<code>copied_from</code> column.</p>"
    ]
    if not copies:
        out.append("<p>No answer repeats course code.</p>")
        return "\n".join(out)
    out.append("<table id='course-copies'>" + _header("student", "answer cell", "course code", "share"))
    out += [
        f"<tr><td>{_e(c.student)}</td><td>{_e(c.match.cell)}</td><td>{_e(c.match.piece)}</td>"
        f"<td class='num'>{c.match.share:.2f}</td></tr>"
        for c in copies
    ]
    out.append("</table>")
    return "\n".join(out)


def _similarity_section(stats: ClassStatistics) -> str:
    top = stats.pairs
    out = [
        f"<p class='note'>Answer cells compared after normalisation (names, comments, docstrings and released "
        "starter code "
        f"ignored; code that more than {similarity.COMMON_FRACTION:.0%} of the class shares is not evidence). A "
        "score is the "
        f"share of distinctive fingerprints two students have in common. Pairs at {similarity.FLAG_SCORE:g} or "
        "above are "
        "marked for review: a reason to read both answers, never a verdict.</p>"
    ]
    if not top:
        out.append("<p>No pair to compare.</p>")
        return "\n".join(out)
    out.append("<table>" + _header("score", "students", "per answer cell", "answers"))
    for i, p in enumerate(top):
        mark = " <span class='flag'>review</span>" if p.flagged else ""
        cells = ", ".join(f"{c}: {s:g}" for c, s in p.cells.items())
        out.append(
            f"<tr><td class='num'>{p.score:.2f}{mark}</td><td>{_e(p.a)} &amp; {_e(p.b)}</td><td>{_e(cells)}</td>"
            f"<td><a href='#pair-{i}'>side by side</a></td></tr>"
        )
    out.append("</table>")
    for i, p in enumerate(top):
        if not p.flagged and i >= 3:
            continue
        sides = [f"<div><b>{_e(student)}</b>{_code(stats.listings[student])}</div>" for student in (p.a, p.b)]
        out.append(
            f"<h3 id='pair-{i}'>{_e(p.a)} &amp; {_e(p.b)}: {p.score:.2f}</h3><div class='side'>{''.join(sides)}</div>"
        )
    return "\n".join(out)


def _examples_section(examples: tuple[Example, ...], labels: dict[str, str]) -> str:
    out = [
        "<h2>Example answers</h2>",
        "<p class='note'>Anonymised: the letters are not the order of the gradebook.</p>",
    ]
    for example in examples:
        who = labels[example.student]
        items = "".join(f"<li>{_e(w)}</li>" for w in example.shows)
        out.append(f"<h3 id='{_anchor(who)}'>{_e(who)}</h3><p>An example of:</p><ul>{items}</ul>{_code(example.code)}")
    return "\n".join(out)


def render(stats: ClassStatistics) -> str:
    """The class report page of one notebook: one offline HTML file (inline style and images, no script)."""
    rates = [(cell.grade_id, cell.rate) for cell in stats.cells]
    histogram, bars = _plots(list(stats.graded), rates)
    labels = _labels(stats.examples)
    body = [
        f"<h1>Class report: {_e(stats.notebook)}</h1>",
        _summary(stats),
        "<h2>Scores</h2>",
        f"<img id='histogram' alt='{_e(_histogram_alt(stats.scores))}' src='{histogram}'>",
        f"<img id='pass-rates' alt='{_e(_rates_alt(rates))}' src='{bars}'>",
        "<h2>Graded cells, hardest first</h2>",
        _failure_table(stats, labels),
        "<h2>Submissions not graded normally</h2>",
        _not_graded_section(stats),
        "<h2>Repairs the grader made</h2>",
        _repairs_section(stats),
        "<h2>Late work</h2>",
        _late_section(stats.lateness),
        "<h2>Similar answers</h2>",
        _similarity_section(stats),
        "<h2>Answers that repeat the course's code</h2>",
        _course_copy_section(stats.course_copies),
        "<h2>Grades that repeat</h2>",
        _verify_section(stats.verify),
        _examples_section(stats.examples, labels),
    ]
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; img-src data:; style-src "
        "'unsafe-inline'\">"
        f"<title>Class report: {_e(stats.notebook)}</title><style>{_STYLE}</style></head><body>"
        + _scrolling_tables("\n".join(body))
        + "</body></html>"
    )


def notebook_page(notebook: str, results: list[Result], workdir: Path, solutions_dir: Path | None = None) -> str:
    """The class report page of `notebook` from its results and the work dir."""
    return render(class_statistics(notebook, results, Path(workdir), solutions_dir, config.MAX_MESSAGE_CHARS))


def write_report(
    out_dir: Path,
    workdir: Path = config.DEFAULT_WORKDIR,
    solutions_dir: Path | None = None,
    db_url: str | None = None,
    out: TextIO | None = None,
) -> list[Path]:
    """Write out_dir/<notebook>.html for every notebook with results in the work dir, with the final points (the
    gradebook's changes by hand included, `reporting.final`), as the export and feedback show them. With `out`,
    one `[i/N]` line per page as it is written (a page reads every submission's executed notebook)."""
    changes = hand_changes(workdir, db_url)
    results = [with_changes(result, changes) for result in load_results(workdir)]
    if not results:
        raise MissingInput(f"no results in {Path(workdir) / config.RESULTS_DIR}: run `autograder grade` first")
    by_notebook: dict[str, list[Result]] = defaultdict(list)
    for r in results:
        by_notebook[r.notebook].append(r)
    written = []
    for done, (notebook, rows) in enumerate(sorted(by_notebook.items()), 1):
        target = Path(out_dir) / f"{notebook}.html"
        atomic_write(target, notebook_page(notebook, rows, Path(workdir), solutions_dir))
        written.append(target)
        if out is not None:
            print(f"[{done}/{len(by_notebook)}] {target} ({len(rows)} submission(s))", file=out, flush=True)
    return written
