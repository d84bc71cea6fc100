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
"""

from __future__ import annotations

import base64
import html
import io
import json
import time
from collections import Counter, defaultdict
from pathlib import Path

from autograder import config
from autograder.errors import MissingInput
from autograder.model.notebooks import max_points, read, secret_lines, source_notebook
from autograder.model.records import Regrade, Result
from autograder.reporting.feedback import MAX_MESSAGE_CHARS
from autograder.reporting.redact import redact
from autograder.store.gradebook import atomic_write, executed_path, load_results

TOP_MESSAGES = 5  # failure messages listed per cell
TOP_PAIRS = 10  # similar pairs listed per notebook
NOT_RUN = "did not run: the submission could not be run to this test (reasons below)"
VERIFY_FILE = "verify.json"  # written by `grade --verify` in the work dir

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


def _histogram_alt(graded: list[Result], total: float, mean: float) -> str:
    full = sum(1 for r in graded if r.score == r.max_score)
    zero = sum(1 for r in graded if r.score == 0)
    return (
        f"Histogram of the scores of {len(graded)} submission(s), from 0 to {total:g}: mean {mean:.2f}, "
        f"{full} with full marks, {zero} with none."
    )


def _rates_alt(rates: list[tuple[str, float]]) -> str:
    shown = "; ".join(f"{cell} {100 * rate:.0f}%" for cell, rate in rates[:ALT_CELLS])
    rest = f"; {len(rates) - ALT_CELLS} more in the table below" if len(rates) > ALT_CELLS else ""
    return f"Bar chart of the share of submissions passing each graded cell, hardest first: {shown}{rest}."


def _anonymiser():
    names: dict[str, str] = {}

    def label(student: str) -> str:
        if student not in names:
            n = len(names)
            letters = ""
            while True:
                letters = chr(ord("A") + n % 26) + letters
                n = n // 26 - 1
                if n < 0:
                    break
            names[student] = f"student {letters}"
        return names[student]

    return label


def _answer_code(workdir: Path, student: str, notebook: str, hidden: set[str]) -> str:
    from autograder.reporting.similarity import answer_cells

    path = executed_path(workdir, student, notebook)
    if not path.exists():
        return "(no executed notebook: the submission could not run)"
    try:
        cells = answer_cells(read(path))
    except Exception:  # noqa: BLE001
        return "(the executed notebook could not be read)"
    return redact("\n\n".join(f"# --- answer cell {gid}\n{src}" for gid, src in cells.items()), hidden)


def _late_section(results: list[Result]) -> str:
    with_deadline = [(r, r.late) for r in results if r.late is not None and r.late.deadline]
    late = [(r, record) for r, record in with_deadline if record.late_days > 0]
    if not with_deadline:
        return (
            "<p class='note'>No deadline was given to <code>grade</code> (<code>--deadline</code>): "
            "lateness not checked.</p>"
        )
    first = with_deadline[0][1]
    out = [
        f"<p>Deadline {_e(first.deadline)}, policy <code>{_e(first.policy)}</code>: "
        f"{len(late)} of {len(with_deadline)} submission(s) late.</p>"
    ]
    if late:
        out.append(
            "<table>" + _header("student", "submitted", "time from", "late days", "penalty", "raw score", "final score")
        )
        for r, record in sorted(late, key=lambda pair: (-pair[1].late_days, pair[0].student)):
            out.append(
                f"<tr><td>{_e(r.student)}</td><td>{_e(record.submitted_at)}</td><td>{_e(record.source)}</td>"
                f"<td class='num'>{record.late_days}</td><td class='num'>{100 * record.penalty:g}%</td>"
                f"<td class='num'>{r.score:g}</td><td class='num'>{record.final_score:g}</td></tr>"
            )
        out.append("</table>")
    return "\n".join(out)


def _verify_section(workdir: Path, notebook: str) -> str:
    path = Path(workdir) / VERIFY_FILE
    if not path.exists():
        return (
            "<p class='note'>Not checked: <code>grade --verify FRACTION</code> grades a sample again and lists here "
            "any per-cell difference.</p>"
        )
    data = json.loads(path.read_text(encoding="utf-8"))
    checked = [c for c in map(Regrade.from_json, data.get("checked", [])) if c.notebook == notebook]
    differ = [c for c in checked if c.differences]
    out = [
        f"<p>Last run {_e(data.get('when', ''))}: {len(checked)} submission(s) graded again in a fresh sandbox "
        f"(sample fraction {data.get('fraction')}, seed {data.get('seed')}); "
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


def _course_copy_section(workdir: Path, notebook: str, solutions_dir: Path | None) -> str:
    from autograder.reporting import similarity

    pieces = similarity.course_pieces()
    starter = similarity.starter_code(notebook, solutions_dir)
    rows = []
    for student, answers in similarity.class_answers(workdir, notebook).items():
        for match in similarity.course_matches(answers, pieces, starter):
            rows.append(
                f"<tr><td>{_e(student)}</td><td>{_e(match.cell)}</td><td>{_e(match.piece)}</td>"
                f"<td class='num'>{match.share:.2f}</td></tr>"
            )
    out = [
        f"<p class='note'>Each answer cell compared with every function and class the course publishes at some point "
        f"of the term (course/*.py, the lessons' code), answers included: a cell that holds at least "
        f"{similarity.COURSE_FLAG:.0%} of a piece's distinctive fingerprints is listed (names, comments and the "
        "released "
        "starter code do not count). A reason to read the answer, never a verdict. The same list is the export's "
        "<code>copied_from</code> column.</p>"
    ]
    if not rows:
        out.append("<p>No answer repeats course code.</p>")
        return "\n".join(out)
    out.append("<table id='course-copies'>" + _header("student", "answer cell", "course code", "share"))
    out += rows
    out.append("</table>")
    return "\n".join(out)


def _similarity_section(workdir: Path, notebook: str, hidden: set[str], solutions_dir: Path | None) -> str:
    from autograder.reporting import similarity

    pairs, answers = similarity.class_pairs(workdir, notebook, solutions_dir)
    top = pairs[:TOP_PAIRS]
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
        sides = []
        for student in (p.a, p.b):
            code = "\n\n".join(f"# --- {gid}\n{src}" for gid, src in answers.get(student, {}).items())
            sides.append(f"<div><b>{_e(student)}</b>{_code(redact(code, hidden))}</div>")
        out.append(
            f"<h3 id='pair-{i}'>{_e(p.a)} &amp; {_e(p.b)}: {p.score:.2f}</h3><div class='side'>{''.join(sides)}</div>"
        )
    return "\n".join(out)


def notebook_page(notebook: str, results: list[Result], workdir: Path, solutions_dir: Path | None = None) -> str:
    source = read(source_notebook(notebook, solutions_dir))
    hidden = secret_lines(source)
    order = list(max_points(source))
    graded = [r for r in results if not r.internal_error]
    cell_ids = order + sorted({c.grade_id for r in graded for c in r.cells} - set(order))
    passes = {cid: [0, 0] for cid in cell_ids}
    failures: dict[str, Counter] = defaultdict(Counter)
    example: dict[tuple[str, str], str] = {}
    for r in graded:
        for c in r.cells:
            passes[c.grade_id][1] += 1
            if c.passed:
                passes[c.grade_id][0] += 1
            else:
                if r.reason and c.message == r.reason:  # not run at all: one line for every such cause
                    message = NOT_RUN
                else:
                    message = redact(c.message or "failed", hidden)
                    message = message if len(message) <= MAX_MESSAGE_CHARS else message[:MAX_MESSAGE_CHARS] + " [...]"
                failures[c.grade_id][message] += 1
                if (c.grade_id, message) not in example and message != NOT_RUN:  # an example whose code ran
                    example[(c.grade_id, message)] = r.student
    rates = sorted(
        ((cid, (p / n) if n else 0.0) for cid, (p, n) in passes.items()), key=lambda x: (x[1], cell_ids.index(x[0]))
    )
    histogram, bars = _plots(graded, rates)
    anonymous = _anonymiser()
    total = graded[0].max_score if graded else 0
    mean = sum(r.score for r in graded) / len(graded) if graded else 0
    body = [
        f"<h1>Class report: {_e(notebook)}</h1>",
        f"<p>{len(graded)} submission(s), mean {mean:.2f} / {total:g}, "
        f"{sum(1 for r in graded if r.score == r.max_score)} full marks, {sum(1 for r in graded if r.reason)} not "
        "graded normally. "
        f"Built {time.strftime('%Y-%m-%d %H:%M')} from the work dir, without grading again.</p>",
        "<h2>Scores</h2>",
        f"<img id='histogram' alt='{_e(_histogram_alt(graded, total, mean))}' src='{histogram}'>",
        f"<img id='pass-rates' alt='{_e(_rates_alt(rates))}' src='{bars}'>",
        "<h2>Graded cells, hardest first</h2>",
    ]
    body.append("<table id='failures'>" + _header("cell", "pass rate", "failure message", "students", "example"))
    examples: dict[str, tuple[str, str, list[str]]] = {}  # student -> (anchor, label, what it exemplifies)
    for cid, rate in rates:
        passed, n = passes[cid]
        top = failures[cid].most_common(TOP_MESSAGES)
        rows = top or [("", 0)]
        for j, (message, count) in enumerate(rows):
            first = (
                f"<td rowspan='{len(rows)}'><code>{_e(cid)}</code></td><td rowspan='{len(rows)}' "
                f"class='num'>{passed}/{n} ({100 * rate:.0f}%)</td>"
                if j == 0
                else ""
            )
            link = ""
            if message and (cid, message) in example:
                student = example[(cid, message)]
                who = anonymous(student)
                anchor = "ex-" + who.split()[-1]
                link = f"<a href='#{anchor}'>{_e(who)}</a>"
                examples.setdefault(student, (anchor, who, []))[2].append(f"{cid}: {message}")
            shown = _e(message) if message else "all passed"
            cells = f"<td class='msg'>{shown}</td><td class='num count'>{count if message else ''}</td><td>{link}</td>"
            body.append(f"<tr data-cell='{_e(cid)}'>{first}{cells}</tr>")
        if len(failures[cid]) > TOP_MESSAGES:
            rest = sum(failures[cid].values()) - sum(c for _, c in top)
            body.append(
                f"<tr data-cell='{_e(cid)}'><td colspan='2'></td><td "
                f"class='note'>{len(failures[cid]) - TOP_MESSAGES} other message(s)</td>"
                f"<td class='num count'>{rest}</td><td></td></tr>"
            )
    body.append("</table>")

    body.append("<h2>Submissions not graded normally</h2>")
    reasons = [r for r in results if r.reason or r.internal_error]
    if reasons:
        body.append("<table id='reasons'>" + _header("student", "score", "reason"))
        for r in reasons:
            body.append(
                f"<tr><td>{_e(r.student)}</td><td "
                f"class='num'>{r.score:g}</td><td>{_e(redact(r.reason or r.internal_error, hidden))}</td></tr>"
            )
        body.append("</table>")
    else:
        body.append("<p>None: every notebook ran to the end.</p>")
    repaired = [r for r in results if r.repairs]
    body.append("<h2>Repairs the grader made</h2>")
    if repaired:
        body.append("<table id='repairs'>" + _header("student", "repairs"))
        for r in repaired:
            items = "".join(f"<li>{_e(redact(x, hidden))}</li>" for x in r.repairs)
            body.append(f"<tr><td>{_e(r.student)}</td><td><ul>{items}</ul></td></tr>")
        body.append("</table>")
    else:
        body.append("<p>None.</p>")
    body += ["<h2>Late work</h2>", _late_section(results)]
    body += ["<h2>Similar answers</h2>", _similarity_section(workdir, notebook, hidden, solutions_dir)]
    body += ["<h2>Answers that repeat the course's code</h2>", _course_copy_section(workdir, notebook, solutions_dir)]
    body += ["<h2>Grades that repeat</h2>", _verify_section(workdir, notebook)]
    body += [
        "<h2>Example answers</h2>",
        "<p class='note'>Anonymised: the letters are not the order of the gradebook.</p>",
    ]
    for student, (anchor, who, why) in examples.items():
        items = "".join(f"<li>{_e(w)}</li>" for w in why)
        code = _answer_code(workdir, student, notebook, hidden)
        body.append(f"<h3 id='{anchor}'>{_e(who)}</h3><p>An example of:</p><ul>{items}</ul>{_code(code)}")
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; img-src data:; style-src "
        "'unsafe-inline'\">"
        f"<title>Class report: {_e(notebook)}</title><style>{_STYLE}</style></head><body>"
        + _scrolling_tables("\n".join(body))
        + "</body></html>"
    )


def write_report(
    out_dir: Path, workdir: Path = config.DEFAULT_WORKDIR, solutions_dir: Path | None = None
) -> list[Path]:
    """Write out_dir/<notebook>.html for every notebook with results in the work dir."""
    results = load_results(workdir)
    if not results:
        raise MissingInput(f"no results in {Path(workdir) / config.RESULTS_DIR}: run `autograder grade` first")
    by_notebook: dict[str, list[Result]] = defaultdict(list)
    for r in results:
        by_notebook[r.notebook].append(r)
    written = []
    for notebook, rows in sorted(by_notebook.items()):
        target = Path(out_dir) / f"{notebook}.html"
        atomic_write(target, notebook_page(notebook, rows, Path(workdir), solutions_dir))
        written.append(target)
    return written
