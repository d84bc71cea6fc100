"""The class report's numbers: what a class did with one notebook, as typed records, without HTML.

Read from the work dir only (result records, executed notebooks, `grade --verify`'s record), never by grading
again; `reporting.report` renders the records into the page, and this module never imports it. The functions
that take records are plain computations (tests/test_statistics.py checks them on a class built by hand); only
`class_statistics` and the two readers below it touch files.

Every text a student's code produced or wrote that a record here holds (a failure message, a reason, a repair
note, answer code) is already redacted: each line of hidden test source replaced (`redact`), so the page built
from these records holds no hidden line to leak. Redacted is not safe markup: the page still escapes all of it.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from autograder import config
from autograder.model.notebooks import max_points, read, secret_lines, source_notebook
from autograder.model.records import LateRecord, Regrade, Result
from autograder.reporting import similarity
from autograder.reporting.redact import redact
from autograder.store.gradebook import executed_path

TOP_MESSAGES = 5  # failure messages listed per cell
TOP_PAIRS = 10  # similar pairs listed per notebook
NOT_RUN = "did not run: the submission could not be run to this test (reasons below)"


@dataclass(frozen=True)
class Scores:
    """The score distribution's summary, over the graded submissions (the grader's own failures left out)."""

    submissions: int
    total: float  # the notebook's full marks (0 with no submission)
    mean: float
    full_marks: int
    zero: int
    with_reason: int  # scored for a reason other than the tests (a broken file, a timeout): not graded normally


@dataclass(frozen=True)
class Failure:
    """One way a graded cell failed: the message and how many submissions failed with it."""

    message: str  # redacted and cut to the feedback's length; NOT_RUN for all that did not run to the test
    count: int
    example: str | None = None  # the first student, in gradebook order, whose code ran and failed this way


@dataclass(frozen=True)
class CellRate:
    """A graded cell's pass rate and its most frequent failure messages."""

    grade_id: str
    passed: int
    submissions: int  # graded submissions with a result for this cell
    failures: tuple[Failure, ...] = ()  # the TOP_MESSAGES most frequent, a tie in the order first met
    other_messages: int = 0  # distinct messages beyond those
    other_count: int = 0  # submissions that failed with one of them

    @property
    def rate(self) -> float:
        return self.passed / self.submissions if self.submissions else 0.0


@dataclass(frozen=True)
class NotGraded:
    """A submission that was not graded by its tests alone: unreadable, stopped early, or the grader failed."""

    student: str
    score: float
    reason: str  # redacted


@dataclass(frozen=True)
class Repaired:
    student: str
    repairs: tuple[str, ...]  # what the grader fixed or put back, redacted


@dataclass(frozen=True)
class LateSubmission:
    student: str
    score: float  # before the penalty
    record: LateRecord


@dataclass(frozen=True)
class LateWork:
    """Late work, when `grade` was given a deadline."""

    deadline: str
    policy: str
    checked: int  # submissions checked against the deadline
    late: tuple[LateSubmission, ...]  # the most days late first, then by name


@dataclass(frozen=True)
class VerifyRun:
    """The last `grade --verify`: this notebook's submissions graded again, and any per-cell difference."""

    when: str
    fraction: float | None
    seed: int | None
    checked: tuple[Regrade, ...]

    @property
    def differ(self) -> tuple[Regrade, ...]:
        return tuple(c for c in self.checked if c.differences)


@dataclass(frozen=True)
class Example:
    """A student whose answer code the page shows (anonymised) as an example of failure messages."""

    student: str
    shows: tuple[str, ...]  # "cell: message", for each message it exemplifies
    code: str  # the answer cells, redacted; or why there is none


@dataclass(frozen=True)
class CourseCopy:
    student: str
    match: similarity.CourseMatch


@dataclass(frozen=True)
class ClassStatistics:
    """Everything the class report of one notebook shows, in the order of its sections."""

    notebook: str
    graded: tuple[Result, ...]  # the grader's own failures left out
    scores: Scores
    cells: tuple[CellRate, ...]  # hardest first
    not_graded: tuple[NotGraded, ...]
    repaired: tuple[Repaired, ...]
    lateness: LateWork | None  # None: no deadline given
    pairs: tuple[similarity.Pair, ...]  # the TOP_PAIRS most similar, most similar first
    listings: dict[str, str] = field(default_factory=dict)  # student of a pair -> answer cells, redacted
    course_copies: tuple[CourseCopy, ...] = ()
    verify: VerifyRun | None = None  # None: never verified
    examples: tuple[Example, ...] = ()  # in the order the failure table first links them


def graded_results(results: list[Result]) -> list[Result]:
    """The submissions graded at all: a grader failure is not a score of the student's."""
    return [r for r in results if not r.internal_error]


def score_summary(graded: list[Result]) -> Scores:
    n = len(graded)
    return Scores(
        submissions=n,
        total=graded[0].max_score if graded else 0,
        mean=sum(r.score for r in graded) / n if graded else 0,
        full_marks=sum(1 for r in graded if r.score == r.max_score),
        zero=sum(1 for r in graded if r.score == 0),
        with_reason=sum(1 for r in graded if r.reason),
    )


def failure_message(result: Result, message: str, hidden: set[str], message_chars: int) -> str:
    """What a failed cell is counted under: one line for every submission that did not run to the test (its
    message is the submission's reason), else its message redacted and cut to `message_chars`."""
    if result.reason and message == result.reason:
        return NOT_RUN
    return redact(message or "failed", hidden, message_chars)


def cell_rates(graded: list[Result], order: list[str], hidden: set[str], message_chars: int) -> list[CellRate]:
    """Each graded cell's pass rate and failure messages, hardest first (a tie in notebook order). `order`: the
    graded cells of the source notebook; a cell that only results name comes after them, by name."""
    cell_ids = order + sorted({c.grade_id for r in graded for c in r.cells} - set(order))
    passed = dict.fromkeys(cell_ids, 0)
    counted = dict.fromkeys(cell_ids, 0)
    failures: dict[str, Counter[str]] = {cid: Counter() for cid in cell_ids}
    example: dict[tuple[str, str], str] = {}
    for r in graded:
        for c in r.cells:
            counted[c.grade_id] += 1
            if c.passed:
                passed[c.grade_id] += 1
                continue
            message = failure_message(r, c.message, hidden, message_chars)
            failures[c.grade_id][message] += 1
            if message != NOT_RUN:  # an example whose code ran
                example.setdefault((c.grade_id, message), r.student)
    cells = []
    for cid in cell_ids:
        top = failures[cid].most_common(TOP_MESSAGES)
        cells.append(
            CellRate(
                cid,
                passed[cid],
                counted[cid],
                tuple(Failure(m, n, example.get((cid, m))) for m, n in top),
                other_messages=max(0, len(failures[cid]) - TOP_MESSAGES),
                other_count=sum(failures[cid].values()) - sum(n for _, n in top),
            )
        )
    return sorted(cells, key=lambda cell: (cell.rate, cell_ids.index(cell.grade_id)))


def not_graded(results: list[Result], hidden: set[str]) -> list[NotGraded]:
    return [
        NotGraded(r.student, r.score, redact(r.reason or r.internal_error, hidden))
        for r in results
        if r.reason or r.internal_error
    ]


def repaired(results: list[Result], hidden: set[str]) -> list[Repaired]:
    return [Repaired(r.student, tuple(redact(x, hidden) for x in r.repairs)) for r in results if r.repairs]


def lateness(results: list[Result]) -> LateWork | None:
    """Late work against the deadline `grade` was given (the first record's deadline and policy: one per run);
    None when none was given."""
    checked = [(r, r.late) for r in results if r.late is not None and r.late.deadline]
    if not checked:
        return None
    late = sorted(
        (LateSubmission(r.student, r.score, record) for r, record in checked if record.late_days > 0),
        key=lambda s: (-s.record.late_days, s.student),
    )
    first = checked[0][1]
    return LateWork(first.deadline, first.policy, len(checked), tuple(late))


def examples(cells: list[CellRate]) -> dict[str, list[str]]:
    """{student: ["cell: message", ...]}: whose answer exemplifies which listed failure, in the order the failure
    table first links each student."""
    out: dict[str, list[str]] = {}
    for cell in cells:
        for failure in cell.failures:
            if failure.example is not None:
                out.setdefault(failure.example, []).append(f"{cell.grade_id}: {failure.message}")
    return out


def read_verify(workdir: Path, notebook: str) -> VerifyRun | None:
    """The last `grade --verify`'s record, this notebook's part; None when it never ran."""
    path = Path(workdir) / config.VERIFY_FILE
    if not path.exists():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    checked = tuple(c for c in map(Regrade.from_json, data.get("checked", [])) if c.notebook == notebook)
    return VerifyRun(str(data.get("when", "")), data.get("fraction"), data.get("seed"), checked)


def answer_code(workdir: Path, student: str, notebook: str, hidden: set[str]) -> str:
    """A student's answer cells from the executed notebook, redacted; or why there are none."""
    path = executed_path(workdir, student, notebook)
    if not path.exists():
        return "(no executed notebook: the submission could not run)"
    try:
        cells = similarity.answer_cells(read(path))
    except Exception:  # noqa: BLE001
        return "(the executed notebook could not be read)"
    return redact("\n\n".join(f"# --- answer cell {gid}\n{src}" for gid, src in cells.items()), hidden)


def class_statistics(
    notebook: str, results: list[Result], workdir: Path, solutions_dir: Path | None, message_chars: int
) -> ClassStatistics:
    """What the class report of `notebook` shows, from its results and the work dir. `message_chars`: a failure
    message is cut to this length (the feedback's), and messages equal so far are counted as one."""
    source = read(source_notebook(notebook, solutions_dir))
    hidden = secret_lines(source)
    scored = graded_results(results)
    cells = cell_rates(scored, list(max_points(source)), hidden, message_chars)
    answers = similarity.class_answers(workdir, notebook)
    starter = similarity.starter_code(notebook, solutions_dir)
    pairs = similarity.compare(answers, starter)[:TOP_PAIRS]
    pieces = similarity.course_pieces()
    listings = {
        student: redact("\n\n".join(f"# --- {gid}\n{src}" for gid, src in answers.get(student, {}).items()), hidden)
        for pair in pairs
        for student in (pair.a, pair.b)
    }
    return ClassStatistics(
        notebook=notebook,
        graded=tuple(scored),
        scores=score_summary(scored),
        cells=tuple(cells),
        not_graded=tuple(not_graded(results, hidden)),
        repaired=tuple(repaired(results, hidden)),
        lateness=lateness(results),
        pairs=tuple(pairs),
        listings=listings,
        course_copies=tuple(
            CourseCopy(student, match)
            for student, own in answers.items()
            for match in similarity.course_matches(own, pieces, starter)
        ),
        verify=read_verify(workdir, notebook),
        examples=tuple(
            Example(student, tuple(shows), answer_code(workdir, student, notebook, hidden))
            for student, shows in examples(cells).items()
        ),
    )
