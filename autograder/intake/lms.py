"""LMS exports: whose file each upload is (Canvas's and Moodle's names), and the rosters that name the students.

Canvas's "Download submissions" zip holds flat files named (canvas-lms, ContentZipper)

    <sortable name>[_late]_<user id>_<attachment id>_<file name as uploaded>
    doejohn_12345_67890_02_dot_product_attention.ipynb
    doejohn_late_12345_67991_02_dot_product_attention-1.ipynb     (a re-upload, after the due date)

Moodle's "Download all submissions" zip (mod/assign/locallib.php, download_submissions) holds one
folder per student and submission plugin (Moodle 3.1 and later; flat files named the same way before,
or with "Download submissions in folders" off):

    <full name>_<participant id>_assignsubmission_file_/<file name as uploaded>
    Ada Lovelace_1234567_assignsubmission_file_/02_dot_product_attention.ipynb
    Participant_1234567_assignsubmission_file_/...      (blind marking: no name)

where the participant id is the assignment's own id for that student (the number in "Participant
1234567" of the assignment's grading worksheet, the column `export --format moodle` fills). Moodle
writes the full name with its underscores made spaces, and does not shorten it: the id is read from
the whole folder name, whatever its length.

The student becomes `<sortable name>-<user id>` (Canvas) or `<Full-Name>-<participant id>` (Moodle): two
students may share a name, never an id (a long name is cut, never the id); or the roster's name for that id.
"""

from __future__ import annotations

import csv
import re
from datetime import datetime
from pathlib import Path, PurePosixPath

from autograder.errors import InputError, MissingInput
from autograder.intake.archives import Entry
from autograder.intake.names import Upload, distinct_ids, duplicate_number, usable_student_id

# <name>[_late]_<user id>_<attachment id>_<file>; the name is optional (anonymous grading).
CANVAS = re.compile(
    r"^(?:(?P<name>\w+?)_)??(?:(?P<late>late)_)?(?P<user>\d+)_(?P<attachment>\d+)_(?P<file>.+)$", re.IGNORECASE
)
# <full name>_<participant id>_assignsubmission_<plugin>_[<file>]: Moodle's folder (file "") or flat file name.
MOODLE = re.compile(r"^(?P<name>[^_/]+)_(?P<participant>\d+)_assignsubmission_(?P<plugin>[a-z]+)_(?P<file>.*)$")
# The importer of Moodle's grading worksheet finds a student by this text followed by the participant id.
MOODLE_PARTICIPANT = "Participant "
# Moodle writes times as userdate() does in English (langconfig strftimedaydatetime).
MOODLE_TIME = "%A, %d %B %Y, %I:%M %p"
_LMS_ID_SUFFIX = re.compile(r"-(\d+)$")


def canvas_student(name: str | None, user: str) -> str:
    """The student id of a Canvas upload whose user id is not in a roster: `<name>-<user id>`."""
    return usable_student_id(name or "user", keep=user)


def moodle_student(name: str | None, participant: str) -> str:
    """The student id of a Moodle upload: `<Full-Name>-<participant id>` (blind marking, or a name with no letter
    or digit this id can hold: `Participant-<id>`)."""
    student = usable_student_id(name or "", keep=participant)
    return student if student != participant else f"Participant-{participant}"


def lms_user_id(student: str) -> str:
    """The LMS's id inside a student id made from an LMS export (`name-12345`: Canvas's user id, Moodle's
    participant id), or "" (`export --format canvas` and `--format moodle`, when the intake has no record)."""
    found = _LMS_ID_SUFFIX.search(student)
    return found.group(1) if found else ""


def lms_upload(entry: Entry, roster: dict[str, str]) -> tuple[Upload, str] | None:
    """Whose file this is when Moodle or Canvas named it, with the LMS's id of the student; None otherwise."""
    moodle = _moodle_upload(entry, roster)
    if moodle is not None or len(entry.path.parts) >= 2:
        return moodle
    match = CANVAS.match(entry.path.name)
    if match is None:
        return None
    user = match["user"]
    student = roster.get(user) or canvas_student(match["name"], user)
    order = (int(match["attachment"]),)
    upload = Upload(student, entry.path.name, match["file"], order, bool(match["late"]), entry.data, entry.refused)
    return upload, user


def _moodle_upload(entry: Entry, roster: dict[str, str]) -> tuple[Upload, str] | None:
    path = entry.path
    match = MOODLE.match(path.parts[0])
    if match is None or (len(path.parts) == 1) != bool(match["file"]):
        return None
    uploaded = path.parts[-1] if len(path.parts) > 1 else match["file"]
    participant = match["participant"]
    student = roster.get(participant) or moodle_student(match["name"].strip(), participant)
    order = (entry.mtime, duplicate_number(PurePosixPath(uploaded).stem))
    return Upload(student, str(path), uploaded, order, None, entry.data, entry.refused), participant


def is_lms_folder(folder: Path) -> bool:
    """A folder of flat files or of Moodle's folders (an unzipped LMS export), rather than one folder per student."""
    return any(
        (p.is_file() or MOODLE.match(p.name) is not None) and not p.name.startswith(".") for p in folder.iterdir()
    )


def _roster_rows(path: Path) -> tuple[list[dict[str, str]], dict[str, str]]:
    """The rows of a roster CSV and {lower-case column name: column name}."""
    try:
        with Path(path).open(newline="", encoding="utf-8-sig") as handle:
            rows = list(csv.DictReader(handle))
    except FileNotFoundError:
        raise MissingInput(f"roster {path} does not exist") from None
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise InputError(f"roster {path} cannot be read as a CSV file: {exc}") from None
    if not rows:
        raise InputError(f"roster {path} is empty")
    return rows, {name.strip().lower(): name for name in rows[0] if name}


def moodle_participant(identifier: str) -> str:
    """The participant id in a Moodle worksheet's Identifier ("Participant 1234567" -> "1234567"), or ""."""
    found = re.fullmatch(r"\s*\D*?(\d+)\s*", identifier or "")
    return found.group(1) if found else ""


def _is_moodle_worksheet(columns: dict[str, str]) -> bool:
    return "identifier" in columns and "full name" in columns


def read_roster(path: Path) -> dict[str, str]:
    """{LMS user id: student} from a CSV with columns `id` and `student`, Canvas's gradebook export
    (columns `ID` and `SIS Login ID`, else `Student`; its "Points Possible" row is skipped), or the grading
    worksheet of a Moodle assignment (Identifier "Participant 1234567", Full name: the student is
    `<Full-Name>-1234567`, the name a Moodle submissions zip gives them).

    Two ids whose names make one student id (two John Smiths; `Zoe` and `Zoë`; `Zoe 12` and the `Zoe` of user
    12) each get their id appended (`names.distinct_ids`): two LMS ids are never one student."""
    rows, columns = _roster_rows(path)
    if _is_moodle_worksheet(columns):
        found = {}
        for row in rows:
            participant = moodle_participant(row.get(columns["identifier"]) or "")
            name = (row.get(columns["full name"]) or "").strip()
            if participant:
                found[participant] = moodle_student(name or None, participant)
        return found
    id_col = columns.get("id")
    name_col = columns.get("student") if "sis login id" not in columns else columns["sis login id"]
    if not id_col or not name_col:
        raise InputError(
            f"roster {path}: needs the columns id and student (or Canvas's ID and SIS Login ID / Student, or "
            "Moodle's grading worksheet: Identifier and Full name)"
        )
    names = {}
    for row in rows:
        lms_id, name = (row.get(id_col) or "").strip(), (row.get(name_col) or "").strip()
        if lms_id.isdigit() and name:
            names[lms_id] = name
    return distinct_ids(names)


def roster_times(path: Path | None) -> dict[str, str]:
    """{LMS user id: ISO time it was handed in} from a roster that records it: Moodle's grading worksheet
    ("Last modified (submission)", written in Moodle's English date format; the time zone is this machine's,
    so set TZ to the Moodle user's when they differ). Empty for any other roster."""
    if path is None:
        return {}
    rows, columns = _roster_rows(path)
    column = columns.get("last modified (submission)")
    if not _is_moodle_worksheet(columns) or column is None:
        return {}
    times = {}
    for row in rows:
        participant = moodle_participant(row.get(columns["identifier"]) or "")
        text = " ".join((row.get(column) or "").split())
        try:
            when = datetime.strptime(text, MOODLE_TIME).astimezone()
        except ValueError:
            continue  # "-": nothing submitted
        if participant:
            times[participant] = when.isoformat(timespec="seconds")
    return times


def moodle_time(when: datetime) -> str:
    """A time as Moodle's userdate() writes it in English ("Tuesday, 1 December 2026, 9:05 PM")."""
    text = when.strftime(MOODLE_TIME)
    return re.sub(r"(, )0(\d:)", r"\1\2", re.sub(r"^(\w+, )0", r"\1", text))
