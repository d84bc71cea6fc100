"""Export the gradebook as CSV: one row per student and notebook, one column per test cell.

Scores come from nbgrader's gradebook (so manual grade changes made with nbgrader's
tools show up); the reason a submission could not be graded normally comes from the
result records in the work dir; `copied_from` lists the course code (course/*.py, the
lessons' code) that an answer cell repeats, for review (`similarity.course_matches`).
"""

from __future__ import annotations

import csv
import html
import io
import re
from datetime import datetime
from pathlib import Path
from typing import TextIO

from autograder import config
from autograder.errors import InputError, MissingInput
from autograder.grading.late import final_score
from autograder.model.notebooks import max_points, notebook_names, read, secret_lines, source_notebook
from autograder.model.records import Result
from autograder.reporting import similarity
from autograder.reporting.sanitize import csv_row
from autograder.store.gradebook import atomic_write, load_results, missing_sqlite_file, open_gradebook

FIXED_COLUMNS = ["student", "notebook", "score", "max_score"]
# Only when `grade` was given a deadline: the raw score stays in `score`.
LATE_COLUMNS = ["submitted_at", "late_days", "penalty", "final_score"]


def _cell_order(notebook: str, gradebook_cells: list[str]) -> list[str]:
    """Test cells in the order of the source notebook (gradebook rows are unordered)."""
    try:
        ordered = list(max_points(read(source_notebook(notebook))))
    except FileNotFoundError:
        ordered = []
    return [c for c in ordered if c in gradebook_cells] + sorted(set(gradebook_cells) - set(ordered))


def _copied_from(workdir: Path, notebooks: list[str]) -> dict[tuple[str, str], str]:
    """(student, notebook) -> the course code its answer cells repeat, for review (similarity.course_matches)."""
    pieces = similarity.course_pieces()
    found = {}
    for notebook in notebooks:
        try:
            starter = similarity.starter_code(notebook)
        except FileNotFoundError:
            starter = {}
        for student, answers in similarity.class_answers(workdir, notebook).items():
            found[(student, notebook)] = similarity.describe(similarity.course_matches(answers, pieces, starter))
    return found


def rows(
    workdir: Path = config.DEFAULT_WORKDIR, db_url: str | None = None, out: TextIO | None = None
) -> tuple[list[str], list[dict]]:
    """The header and one row per (student, notebook) of the gradebook. With `out`, one `[i/N]` line per notebook
    as it is read (every submission's cells are read from the gradebook: a class of 300 takes a while)."""
    records = {(r.student, r.notebook): r for r in load_results(workdir)}
    copied = _copied_from(workdir, sorted({notebook for _, notebook in records}))
    columns: list[str] = []
    table: list[dict] = []
    db = config.gradebook_url(workdir, db_url)
    missing = missing_sqlite_file(db)
    if missing is not None:
        raise MissingInput(f"no gradebook at {missing}: run `autograder grade` first")
    known = notebook_names()
    with open_gradebook(db) as gb:
        assignments = sorted(
            gb.assignments, key=lambda a: (known.index(a.name) if a.name in known else len(known), a.name)
        )
        notebooks = [notebook for assignment in assignments for notebook in assignment.notebooks]
        for done, notebook in enumerate(notebooks, 1):
            cells = _cell_order(notebook.name, [c.name for c in notebook.grade_cells])
            columns += [c for c in cells if c not in columns]
            for submission in sorted(notebook.submissions, key=lambda s: s.student.id):
                grades = {g.name: g.score for g in submission.grades}
                row = {
                    "student": submission.student.id,
                    "notebook": notebook.name,
                    "score": f"{submission.score:g}",
                    "max_score": f"{submission.max_score:g}",
                }
                row.update({c: f"{grades.get(c, 0):g}" for c in cells})
                record = records.get((submission.student.id, notebook.name))
                row["reason"] = record.reason if record else ""
                row["repairs"] = " | ".join(record.repairs) if record else ""
                row["copied_from"] = copied.get((submission.student.id, notebook.name), "")
                late = record.late if record else None
                if late is not None and late.deadline:
                    row.update(
                        submitted_at=late.submitted_at,
                        late_days=str(late.late_days),
                        penalty=f"{late.penalty:g}",
                        final_score=f"{final_score(submission.score, late.penalty):g}",
                    )
                table.append(row)
            if out is not None:
                print(
                    f"[{done}/{len(notebooks)}] {notebook.name}: {len(notebook.submissions)} submission(s) read",
                    file=out,
                    flush=True,
                )
    late_columns = LATE_COLUMNS if any("final_score" in row for row in table) else []
    for row in table:  # a row without a deadline (graded before one was given): not late, as far as is known
        if late_columns and "final_score" not in row:
            row.update(submitted_at="", late_days="", penalty="", final_score=row["score"])
    return FIXED_COLUMNS + columns + ["reason", "repairs", "copied_from"] + late_columns, table


def export_csv(
    out_path: Path, workdir: Path = config.DEFAULT_WORKDIR, db_url: str | None = None, out: TextIO | None = None
) -> int:
    """Write the CSV (atomically); returns the number of rows. `out`: progress, as `rows` prints it."""
    header, data = rows(workdir, db_url, out)
    write_csv(Path(out_path), [header] + [[row.get(column, "") for column in header] for row in data])
    return len(data)


def write_csv(out_path: Path, table: list[list[str]]) -> None:
    """Write rows as CSV (atomically), every cell that a spreadsheet would read as a formula neutralised
    (`sanitize.csv_cell`): a student's name or message can hold `=HYPERLINK(...)`. Numbers stay numbers."""
    text = io.StringIO(newline="")
    csv.writer(text).writerows(csv_row(row) for row in table)
    atomic_write(Path(out_path), text.getvalue())


def _lms_ids(workdir: Path, roster: Path | None) -> dict[str, str]:
    """{student: LMS user id}: the ids the intake read from the LMS's file names, then the roster's (which win)."""
    from autograder.intake.lms import read_roster
    from autograder.intake.state import lms_ids

    return lms_ids(workdir) | {student: lms_id for lms_id, student in (read_roster(roster) if roster else {}).items()}


def _first_few(names: list[str]) -> str:
    """At most five names, and `...` when there are more: a warning stays one line for a class of hundreds."""
    return ", ".join(names[:5]) + (" ..." if len(names) > 5 else "")


# --- Canvas: the layout its gradebook import reads ------------------------------------------------
# Canvas's importer (canvas-lms lib/gradebook_importer.rb) wants a header row whose first columns
# are "Student", "ID" and, after the optional "SIS User ID" and "SIS Login ID", "Section"; every
# later column is an assignment, matched by the id in "Title (123)" or else by its title (a title
# Canvas does not know becomes a new assignment). A row whose first cell says "Points Possible"
# gives the assignments' maximum. Students are matched by their Canvas user id (column ID), else
# by SIS ids, else by name. This is the layout of Canvas's own gradebook export.
CANVAS_STUDENT_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]


def canvas_rows(
    workdir: Path = config.DEFAULT_WORKDIR,
    db_url: str | None = None,
    roster: Path | None = None,
    assignment_ids: dict[str, str] | None = None,
    out: TextIO | None = None,
) -> tuple[list[list[str]], list[str]]:
    """The rows of a Canvas gradebook import (header and "Points Possible" first), and warnings.

    One column per notebook holding the score after any late penalty. The Canvas user id of a
    student comes from the roster (`--roster`, as given to `grade`), else from a student name
    that `grade` built from a Canvas file name (`name-12345`)."""
    from autograder.intake.lms import lms_user_id

    _, data = rows(workdir, db_url, out)
    ids = _lms_ids(workdir, roster)
    assignment_ids = assignment_ids or {}
    notebooks = list(dict.fromkeys(row["notebook"] for row in data))
    unknown = sorted(set(assignment_ids) - set(notebooks))
    if unknown:
        raise InputError(f"--assignment-id names notebook(s) not in the gradebook: {', '.join(unknown)}")
    titles = [f"{n} ({assignment_ids[n]})" if n in assignment_ids else n for n in notebooks]
    maximum = {row["notebook"]: row["max_score"] for row in data}
    table: dict[str, dict[str, str]] = {}
    for row in data:
        table.setdefault(row["student"], {})[row["notebook"]] = row.get("final_score") or row["score"]
    lines = [CANVAS_STUDENT_COLUMNS + titles, ["Points Possible", "", "", "", ""] + [maximum[n] for n in notebooks]]
    without_id = []
    for student in sorted(table):
        canvas_id = ids.get(student) or lms_user_id(student)
        if not canvas_id:
            without_id.append(student)
        lines.append([student, canvas_id, "", "", ""] + [table[student].get(n, "") for n in notebooks])
    warnings = []
    if without_id:
        warnings.append(
            f"{len(without_id)} student(s) without a Canvas user id ({_first_few(without_id)}): Canvas will match them "
            "by name only; give --roster (Canvas's gradebook export works) to fill the ID column"
        )
    if notebooks and not assignment_ids:
        warnings.append(
            "no --assignment-id NOTEBOOK=ID: Canvas matches each column to an assignment of the same "
            "title, or creates a new assignment"
        )
    return lines, warnings


def export_canvas(
    out_path: Path,
    workdir: Path = config.DEFAULT_WORKDIR,
    db_url: str | None = None,
    roster: Path | None = None,
    assignment_ids: dict[str, str] | None = None,
    out: TextIO | None = None,
) -> tuple[int, list[str]]:
    """Write the Canvas import CSV (atomically); returns (number of students, warnings)."""
    table, warnings = canvas_rows(workdir, db_url, roster, assignment_ids, out)
    write_csv(Path(out_path), table)
    return len(table) - 2, warnings


# --- Moodle: the grading worksheet of one assignment -------------------------------------------
# Moodle's assignment (Grading action: "Download grading worksheet" / "Upload grading worksheet", the
# offline grading worksheet plugin, mod/assign/feedback/offline) reads back the CSV it hands out. Its
# importer (importgradeslib.php) finds its columns by their English headers: "Identifier" (required:
# "Participant " followed by the participant id, the number of the submissions zip's folder names),
# "Grade" (required), "Last modified (grade)" (required; a grade changed in Moodle after this time is
# kept unless "Allow updating records that have been modified more recently in Moodle" is ticked) and
# the feedback plugins' columns ("Feedback comments"; it ignores a feedback column that comes first). The
# other columns are Moodle's own, in its order (gradingtable.php when downloading); it ignores them.
MOODLE_COLUMNS = [
    "Identifier",
    "Full name",
    "Email address",
    "Status",
    "Grade",
    "Maximum grade",
    "Grade can be changed",
    "Last modified (submission)",
    "Last modified (grade)",
    "Feedback comments",
]


def _worksheet_rows(roster: Path | None) -> dict[str, dict[str, str]]:
    """{participant id: row} of a Moodle grading worksheet given as the roster ({} for any other roster)."""
    if roster is None:
        return {}
    from autograder.intake.lms import moodle_participant

    with Path(roster).open(newline="", encoding="utf-8-sig") as handle:
        rows = list(csv.DictReader(handle))
    if not rows or "Identifier" not in rows[0]:
        return {}
    return {moodle_participant(row.get("Identifier") or ""): row for row in rows}


def moodle_rows(
    workdir: Path = config.DEFAULT_WORKDIR,
    db_url: str | None = None,
    notebook: str | None = None,
    roster: Path | None = None,
    now: datetime | None = None,
    out: TextIO | None = None,
) -> tuple[list[list[str]], list[str]]:
    """The grading worksheet of one notebook (a Moodle assignment): header first, then one row per student with a
    participant id, and warnings.

    The grade is the score after any late penalty; the feedback comment is what the feedback page says, in
    short (reason, repairs, failed tests' messages; hidden test lines redacted), as HTML (Moodle keeps
    feedback comments as HTML). The participant id comes from the roster (`--roster`: Moodle's worksheet
    itself, or id,student) or from a student id `grade` built from Moodle's folder names (`Ada-Lovelace-1234567`)."""
    from autograder.intake.lms import MOODLE_PARTICIPANT, lms_user_id, moodle_time

    _, data = rows(workdir, db_url, out)
    notebook = _moodle_notebook(data, notebook)
    hidden = secret_lines(read(source_notebook(notebook)))
    records = {r.student: r for r in load_results(workdir) if r.notebook == notebook}
    ids = _lms_ids(workdir, roster)
    sheet = _worksheet_rows(roster)
    when = moodle_time((now or datetime.now()).astimezone())
    lines = [list(MOODLE_COLUMNS)]
    without_id, maximum = [], ""
    for row in sorted((r for r in data if r["notebook"] == notebook), key=lambda r: r["student"]):
        participant = ids.get(row["student"]) or lms_user_id(row["student"])
        if not participant:
            without_id.append(row["student"])
            continue
        maximum = row["max_score"]
        comment = _moodle_comment(row, records.get(row["student"]), hidden)
        lines.append(_moodle_row(row, f"{MOODLE_PARTICIPANT}{participant}", sheet.get(participant, {}), when, comment))
    return lines, _moodle_warnings(notebook, without_id, maximum)


def _moodle_notebook(data: list[dict], notebook: str | None) -> str:
    """The notebook of the worksheet: the one asked for, else the gradebook's only one. A worksheet is one Moodle
    assignment, so a gradebook of several notebooks needs `--notebook`, and a name not in it is refused."""
    notebooks = list(dict.fromkeys(row["notebook"] for row in data))
    if notebook is None:
        if len(notebooks) != 1:
            raise InputError(
                f"the gradebook holds {len(notebooks)} notebooks ({', '.join(notebooks)}): a Moodle worksheet is one "
                "assignment, give --notebook NAME"
            )
        notebook = notebooks[0]
    if notebook not in notebooks:
        raise InputError(f"--notebook {notebook}: not in the gradebook ({', '.join(notebooks) or 'empty'})")
    return notebook


def _moodle_comment(row: dict, record: Result | None, hidden: set[str]) -> str:
    """The feedback comment, as HTML (Moodle keeps it so): the grade, the late penalty when there was one, then what
    the feedback page tells the student (`student_message`: hidden test lines redacted). Every line is escaped: a
    test's message can hold a student's text."""
    from autograder.reporting.feedback import student_message

    grade = row.get("final_score") or row["score"]
    lines = [f"{grade} / {row['max_score']} points for {row['notebook']}."]
    if record is not None and record.late is not None and record.late.late_days:
        lines.append(
            f"Handed in {record.late.late_days} day(s) late: {100 * record.late.penalty:g}% off the score "
            f"{row['score']}."
        )
    lines += student_message(record, hidden) if record is not None else []
    return "<br>".join(html.escape(line) for line in lines)


def _moodle_row(row: dict, identifier: str, known: dict[str, str], when: str, comment: str) -> list[str]:
    """One student's row, in MOODLE_COLUMNS' order. Name, e-mail, status and submission time are the worksheet's
    own (`known`, {} without one), so the file reads like the one Moodle handed out; without a worksheet the name is
    made from the student id (`Ada-Lovelace-1234567`: Ada Lovelace)."""
    name = known.get("Full name") or re.sub(r"-\d+$", "", row["student"]).replace("-", " ")
    return [
        identifier,
        name,
        known.get("Email address", ""),
        known.get("Status", ""),
        row.get("final_score") or row["score"],
        row["max_score"],
        "Yes",
        known.get("Last modified (submission)", ""),
        when,
        comment,
    ]


def _moodle_warnings(notebook: str, without_id: list[str], maximum: str) -> list[str]:
    """What to do before uploading: students left out for want of a participant id, and the maximum grade Moodle
    must allow (it skips a grade above the assignment's maximum, silently)."""
    warnings = []
    if without_id:
        warnings.append(
            f"{len(without_id)} student(s) without a Moodle participant id, left out ({_first_few(without_id)}): "
            "give --roster (the assignment's grading worksheet works)"
        )
    if maximum:
        warnings.append(
            f"Moodle skips a grade above the assignment's maximum grade: set {notebook}'s maximum grade in Moodle to "
            f"{maximum} (or more)"
        )
    return warnings


def export_moodle(
    out_path: Path,
    workdir: Path = config.DEFAULT_WORKDIR,
    db_url: str | None = None,
    notebook: str | None = None,
    roster: Path | None = None,
    out: TextIO | None = None,
) -> tuple[int, list[str]]:
    """Write the Moodle grading worksheet (atomically); returns (number of students, warnings)."""
    table, warnings = moodle_rows(workdir, db_url, notebook, roster, out=out)
    write_csv(Path(out_path), table)
    return len(table) - 1, warnings
