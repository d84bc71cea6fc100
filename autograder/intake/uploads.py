"""What instructors hand in: a folder, a zip, or an LMS export, laid out as SUBMISSIONS/<student>/<notebook>.ipynb.

    grade submissions.zip --roster roster.csv

`prepare` turns any of these into the one layout `collect` reads:
- a folder of student folders (`alice/02_dot_product_attention.ipynb`): used in place;
- a zip of such folders, or a zip / a folder of flat LMS files: unpacked into `<workdir>/intake/`.

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
1234567" of the assignment's grading worksheet, the column `export --format moodle` fills).

nbgrader's course directory (`nbgrader collect`, `nbgrader zip_collect`) keeps one folder per student and
assignment, with the time of the submission in `timestamp.txt`:

    submitted/<student id>/<assignment>/<notebook>.ipynb

given as the course directory (the folder holding `submitted/`) or as `submitted/` itself. The student
keeps nbgrader's id, each notebook is graded as the released notebook of its name, and the assignment
it came in is remembered (the gradebook files it there, as nbgrader does).

The student becomes `<sortable name>-<user id>` (Canvas) or `<Full-Name>-<participant id>` (Moodle): two
students may share a name, never an id; or the roster's name for that id. The uploaded file name is
matched to a released notebook after removing what browsers and LMSs append (`-1`, ` (1)`, a
different case), with a note; of several uploads for one notebook the latest wins (Canvas: the highest
attachment id, which Canvas assigns in upload order; Moodle, nbgrader: the file's time in the zip or on
disk). Moodle's zip holds no submission time: its grading worksheet does, given as `--roster`.
Canvas writes no submission time into the zip (its entries carry the time the zip was made), only
the `late` mark, computed against each student's own due date: the time itself comes from
`--timestamps`, and without it a file marked late counts as 1 day late, with a warning.

Refused with a reason, never extracted: paths that climb out (`../`, absolute), links, nested
zips, files that are not notebooks, files over `config.MAX_SUBMISSION_BYTES`, and everything
after `config.MAX_INTAKE_BYTES` in all. A refused notebook of a known student still gives that
student a row with 0 points and the reason.

The laid-out folder carries a manifest, `.intake.json`, that `collect` reads: per (student,
notebook) the original file name, the note on how it was matched, the late mark or the submission
time, and refusals; for an nbgrader course, each notebook's assignment and the course directory.
"""

from __future__ import annotations

import csv
import json
import re
import shutil
import stat
import zipfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import TextIO

from autograder import config

MANIFEST = ".intake.json"
INTAKE_DIR = "intake"

# <name>[_late]_<user id>_<attachment id>_<file>; the name is optional (anonymous grading).
_CANVAS = re.compile(
    r"^(?:(?P<name>\w+?)_)??(?:(?P<late>late)_)?(?P<user>\d+)_(?P<attachment>\d+)_(?P<file>.+)$", re.IGNORECASE
)
# <full name>_<participant id>_assignsubmission_<plugin>_[<file>]: Moodle's folder (file "") or flat file name.
_MOODLE = re.compile(r"^(?P<name>[^_/]+)_(?P<participant>\d+)_assignsubmission_(?P<plugin>[a-z]+)_(?P<file>.*)$")
# The importer of Moodle's grading worksheet finds a student by this text followed by the participant id.
MOODLE_PARTICIPANT = "Participant "
# Moodle writes times as userdate() does in English (langconfig strftimedaydatetime).
MOODLE_TIME = "%A, %d %B %Y, %I:%M %p"
NBGRADER_KEY = "@nbgrader"  # the manifest's entry for an nbgrader course: {"course": ..., "assignments": {...}}
# What browsers and LMSs append to a name they already have: "name (1)", "name-1", "name_1", "Copy of name".
_DUPLICATE_SUFFIX = re.compile(r"(?:\s*\(\d+\)|-\d+|_\d+)$")
_COPY_PREFIX = re.compile(r"^copy of\s+", re.IGNORECASE)
_UNUSABLE_ID_CHARS = re.compile(r"[^A-Za-z0-9._@+-]+")


@dataclass
class Upload:
    """One file of an LMS export, before it is matched to a notebook."""

    student: str
    original: str  # its name in the export
    uploaded_as: str  # the name the student gave it
    order: tuple  # larger = later: (attachment id,) or (modification time, suffix)
    late: bool | None  # the LMS's late mark; None when the export has none
    data: bytes | None = None
    refused: str = ""  # why it was not taken


@dataclass
class Intake:
    folder: Path  # what collect() reads
    notes: list[str] = field(default_factory=list)  # printed once by grade


def released_name(file_name: str, released: list[str]) -> tuple[str | None, bool]:
    """The released notebook a submitted file name stands for, and whether it had to be normalised.

    `02_dot_product_attention (1).ipynb`, `02_dot_product_attention-1.ipynb`, `Copy of
    02_Dot_Product_Attention.ipynb` all stand for 02_dot_product_attention."""
    if not file_name.lower().endswith(".ipynb"):
        return None, False
    stem = file_name[: -len(".ipynb")]
    if stem in released:
        return stem, False
    by_lower = {name.lower(): name for name in released}
    candidate = _COPY_PREFIX.sub("", stem.strip())
    for _ in range(3):  # "name (1)-1" and the like
        if candidate.lower() in by_lower:
            return by_lower[candidate.lower()], True
        shorter = _DUPLICATE_SUFFIX.sub("", candidate).strip()
        if shorter == candidate:
            break
        candidate = shorter
    return (by_lower[candidate.lower()], True) if candidate.lower() in by_lower else (None, False)


def usable_student_id(text: str) -> str:
    """A name made into a gradebook key (letters, digits, . _ @ + -)."""
    return _UNUSABLE_ID_CHARS.sub("-", text.strip()).strip("-.")[:100] or "unnamed"


def _roster_rows(path: Path) -> tuple[list[dict[str, str]], dict[str, str]]:
    """The rows of a roster CSV and {lower-case column name: column name}."""
    with Path(path).open(newline="", encoding="utf-8-sig") as handle:
        rows = list(csv.DictReader(handle))
    if not rows:
        raise ValueError(f"roster {path} is empty")
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

    Two ids with the same name (two John Smiths) each get their id appended to it."""
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
        raise ValueError(
            f"roster {path}: needs the columns id and student (or Canvas's ID and SIS Login ID / Student, or "
            "Moodle's grading worksheet: Identifier and Full name)"
        )
    roster = {}
    for row in rows:
        lms_id, name = (row.get(id_col) or "").strip(), (row.get(name_col) or "").strip()
        if lms_id.isdigit() and name:
            roster[lms_id] = usable_student_id(name)
    shared = {name for name in roster.values() if list(roster.values()).count(name) > 1}
    return {lms_id: f"{name}-{lms_id}" if name in shared else name for lms_id, name in roster.items()}


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


def _is_lms_folder(folder: Path) -> bool:
    """A folder of flat files or of Moodle's folders (an unzipped LMS export), rather than one folder per student."""
    return any(
        (p.is_file() or _MOODLE.match(p.name) is not None) and not p.name.startswith(".") for p in folder.iterdir()
    )


def _climbs_out(path: PurePosixPath) -> bool:
    """Absolute, `..` anywhere, or a Windows drive (`C:/...`): extracting it could land outside."""
    return path.is_absolute() or ".." in path.parts or bool(re.match(r"^[A-Za-z]:", str(path)))


def _refusal(name: str, size: int, is_link: bool, in_archive: bool) -> str:
    """Why a file of a zip or of a flat LMS folder is not taken ("" when it is)."""
    suffix = PurePosixPath(name).suffix.lower()
    if is_link:
        return f"refused {name!r}: a link, not a file"
    if in_archive and suffix in {".zip", ".tar", ".gz", ".tgz", ".7z", ".rar"}:
        return f"refused {name!r}: archives inside the archive are not opened; submit the .ipynb itself"
    if suffix != ".ipynb":
        return f"refused {name!r}: not a Jupyter notebook (.ipynb)"
    if size > config.MAX_SUBMISSION_BYTES:
        return (
            f"refused {name!r}: {size / 2**20:.1f} MiB, over the limit of {config.MAX_SUBMISSION_BYTES / 2**20:g} MiB"
        )
    return ""


@dataclass
class _Entry:
    """One file of a zip or of an unzipped LMS folder: bytes are None when it is refused."""

    path: PurePosixPath
    data: bytes | None
    refused: str
    mtime: float = 0.0  # as the archive or the file system has it (orders a student's uploads in a Moodle export)


def _zip_entries(archive: Path) -> list[_Entry]:
    """Every file of the zip, with its bytes or why it was refused."""
    entries: list[_Entry] = []
    total = 0
    try:
        zf = zipfile.ZipFile(archive)
    except zipfile.BadZipFile as exc:
        raise ValueError(f"{archive} is not a readable zip file ({exc})") from exc
    with zf:
        for info in zf.infolist():
            if info.is_dir():
                continue
            path = PurePosixPath(info.filename.replace("\\", "/"))
            if _climbs_out(path):
                entries.append(_Entry(path, None, f"refused {info.filename!r}: its path leaves the submissions folder"))
                continue
            try:
                mtime = datetime(*info.date_time).timestamp()
            except ValueError:
                mtime = 0.0
            if path.name.startswith(".") or path.parts[0] == "__MACOSX":
                continue  # macOS and editor debris
            refused = _refusal(info.filename, info.file_size, stat.S_ISLNK(info.external_attr >> 16), in_archive=True)
            if not refused and total + info.file_size > config.MAX_INTAKE_BYTES:
                limit = config.MAX_INTAKE_BYTES / 2**30
                refused = f"refused {info.filename!r}: the archive holds more than {limit:g} GiB of notebooks"
            if refused:
                entries.append(_Entry(path, None, refused, mtime))
                continue
            with zf.open(info) as handle:  # read at most the limit: a lying header cannot flood the disk
                data = handle.read(config.MAX_SUBMISSION_BYTES + 1)
            if len(data) > config.MAX_SUBMISSION_BYTES:
                limit = config.MAX_SUBMISSION_BYTES / 2**20
                entries.append(_Entry(path, None, f"refused {info.filename!r}: over the limit of {limit:g} MiB", mtime))
                continue
            total += len(data)
            entries.append(_Entry(path, data, "", mtime))
    return entries


def _folder_entries(folder: Path) -> list[_Entry]:
    """The flat files of an unzipped LMS export, and the files inside its Moodle folders."""
    files = [p for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")]
    for moodle in (p for p in folder.iterdir() if p.is_dir() and not p.is_symlink() and _MOODLE.match(p.name)):
        files += [p for p in moodle.rglob("*") if (p.is_file() or p.is_symlink()) and not p.name.startswith(".")]
    entries: list[_Entry] = []
    for path in sorted(files):
        size = 0 if path.is_symlink() else path.stat().st_size
        refused = _refusal(path.name, size, path.is_symlink(), in_archive=False)
        relative = PurePosixPath(path.relative_to(folder).as_posix())
        mtime = path.lstat().st_mtime
        entries.append(_Entry(relative, None if refused else path.read_bytes(), refused, mtime))
    return entries


def duplicate_number(stem: str) -> int:
    """The number a browser or LMS appended to a name (`x (2)`, `x-2`: 2), 0 if none."""
    suffix = _DUPLICATE_SUFFIX.search(stem)
    return int(re.sub(r"\D", "", suffix.group()) or 0) if suffix else 0


def choose_latest(candidates: list[Upload], notebook: str, kind: str = "uploads") -> tuple[Upload, str]:
    """The upload that counts for `notebook` (the largest `order`), and a note when it is not
    simply `<notebook>.ipynb` handed in once."""
    candidates = sorted(candidates, key=lambda u: u.order)
    latest = candidates[-1]
    notes = [] if latest.uploaded_as == f"{notebook}.ipynb" else [f"submitted as {latest.uploaded_as!r}"]
    if len(candidates) > 1:
        notes.append(
            f"latest of {len(candidates)} {kind} ({', '.join(u.original for u in candidates[:-1])} not graded)"
        )
    return latest, "; ".join(notes)


def _canvas_student(name: str | None, user: str) -> str:
    """The student id of a Canvas upload whose user id is not in a roster: `<name>-<user id>`."""
    return usable_student_id(f"{name}-{user}" if name else f"user-{user}")


_CANVAS_STUDENT_SUFFIX = re.compile(r"-(\d+)$")


def lms_user_id(student: str) -> str:
    """The LMS's id inside a student id made from an LMS export (`name-12345`: Canvas's user id, Moodle's
    participant id), or "" (`export --format canvas` and `--format moodle`)."""
    found = _CANVAS_STUDENT_SUFFIX.search(student)
    return found.group(1) if found else ""


def moodle_student(name: str | None, participant: str) -> str:
    """The student id of a Moodle upload: `<Full-Name>-<participant id>` (blind marking: `Participant-<id>`)."""
    return usable_student_id(f"{name}-{participant}" if name else f"Participant-{participant}")


def _moodle_upload(entry: _Entry, roster: dict[str, str]) -> Upload | None:
    """Whose file this is when it comes from Moodle's submissions zip; None when it does not."""
    path = entry.path
    match = _MOODLE.match(path.parts[0])
    if match is None or (len(path.parts) == 1) != bool(match["file"]):
        return None
    uploaded = path.parts[-1] if len(path.parts) > 1 else match["file"]
    participant = match["participant"]
    student = roster.get(participant) or moodle_student(match["name"].strip(), participant)
    order = (entry.mtime, duplicate_number(PurePosixPath(uploaded).stem))
    return Upload(student, str(path), uploaded, order, None, entry.data, entry.refused)


def _upload(entry: _Entry, roster: dict[str, str]) -> Upload | None:
    """Whose file this is, from a folder (`alice/x.ipynb`), a Moodle or a Canvas name; None if nobody's."""
    path, data, refused = entry.path, entry.data, entry.refused
    moodle = _moodle_upload(entry, roster)
    if moodle is not None:
        return moodle
    if len(path.parts) >= 2:  # a zipped folder of student folders: the innermost folder is the student
        return Upload(
            usable_student_id(path.parts[-2]),
            str(path),
            path.name,
            (0, duplicate_number(path.stem)),
            None,
            data,
            refused,
        )
    match = _CANVAS.match(path.name)
    if match is None:
        return None
    user = match["user"]
    student = roster.get(user) or _canvas_student(match["name"], user)
    return Upload(student, path.name, match["file"], (int(match["attachment"]),), bool(match["late"]), data, refused)


def prepare(
    source: Path, workdir: Path, released: list[str], roster_path: Path | None = None, out: TextIO | None = None
) -> Intake:
    """The folder to grade: `source` itself when it already has one folder per student, else a
    fresh `<workdir>/intake/submissions` built from the zip or the flat LMS folder."""
    source = Path(source)
    roster = read_roster(roster_path) if roster_path else {}
    submitted = nbgrader_submitted(source) if source.is_dir() else None
    if submitted is not None:
        return _prepare_nbgrader(submitted, workdir, released, roster, out)
    if source.is_dir() and not _is_lms_folder(source):
        if roster:
            present = {p.name for p in source.iterdir() if p.is_dir()}
            missing = sorted(set(roster.values()) - present)
            if missing:
                nothing = [f"roster: {len(missing)} student(s) submitted nothing: {', '.join(missing)}"]
                return _with_empty_students(source, workdir, missing, nothing, out)
        return Intake(source)
    if not source.exists():
        raise FileNotFoundError(f"submissions folder or zip {source} does not exist")
    notes: list[str] = []
    entries = _zip_entries(source) if source.is_file() else _folder_entries(source)
    uploads: list[Upload] = []
    for entry in entries:
        if _climbs_out(entry.path):  # nobody's: never a folder named after a path that climbs out
            notes.append(entry.refused)
            continue
        upload = _upload(entry, roster)
        if upload is None:
            notes.append(
                f"refused {str(entry.path)!r}: whose is it? Neither in a student's folder nor named by the LMS "
                "(Canvas: name_userid_fileid_file; Moodle: Full Name_participantid_assignsubmission_file_)"
            )
        else:
            uploads.append(upload)
    target = _fresh_target(workdir)
    target.mkdir()
    manifest: dict[str, dict] = {}
    chosen: dict[tuple[str, str], list[Upload]] = {}
    for upload in uploads:
        notebook, _ = released_name(upload.uploaded_as, released)
        if notebook is None:
            if not upload.refused:
                notes.append(
                    f"{upload.student}: {upload.original!r} is not a released notebook ({', '.join(released)}); not "
                    "graded"
                )
            else:
                notes.append(f"{upload.student}: {upload.refused}")
            (target / upload.student).mkdir(exist_ok=True)
            continue
        chosen.setdefault((upload.student, notebook), []).append(upload)
    times = {roster[lms_id]: when for lms_id, when in roster_times(roster_path).items() if lms_id in roster}
    for (student, notebook), candidates in sorted(chosen.items()):
        latest, note = choose_latest(candidates, notebook)
        record: dict = {"original": latest.original, "late": latest.late, "note": note, "problem": ""}
        if student in times:
            record.update(submitted_at=times[student], time_source="Moodle grading worksheet")
        (target / student).mkdir(exist_ok=True)
        if latest.refused:
            record["problem"] = latest.refused
            notes.append(f"{student}/{notebook}: {latest.refused}")
        else:
            (target / student / f"{notebook}.ipynb").write_bytes(latest.data or b"")
        manifest[f"{student}/{notebook}"] = record
    for student in sorted(set(roster.values()) - {u.student for u in uploads}):
        (target / student).mkdir(exist_ok=True)
        notes.append(f"roster: {student} submitted nothing")
    (target / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True), encoding="utf-8")
    students = len({u.student for u in uploads} | set(roster.values()))
    notes.append(f"Intake: {len(manifest)} notebook(s) of {students} student(s) from {source.name} into {target}")
    _say(notes, out)
    return Intake(target, notes)


def nbgrader_submitted(folder: Path) -> Path | None:
    """The `submitted/<student>/<assignment>/<notebook>.ipynb` folder of an nbgrader course, when `folder` is
    the course directory (it holds `submitted/`) or that folder itself; None for any other layout."""
    folder = Path(folder)
    if (folder / "submitted").is_dir():
        return folder / "submitted"
    nested = any(p.is_file() for p in folder.glob("*/*/*.ipynb"))
    flat = any(p.is_file() for p in folder.glob("*/*.ipynb"))
    return folder if nested and not flat and not _is_lms_folder(folder) else None


def nbgrader_course(submitted: Path) -> Path | None:
    """The nbgrader course directory around a `submitted` folder (it has nbgrader's config, gradebook or source)."""
    parent = Path(submitted).resolve().parent
    markers = ("nbgrader_config.py", "gradebook.db", "source")
    return parent if Path(submitted).name == "submitted" and any((parent / m).exists() for m in markers) else None


def nbgrader_timestamp(text: str) -> str:
    """nbgrader's `timestamp.txt` as an ISO 8601 time in UTC (nbgrader reads a time without a zone as UTC)."""
    from nbgrader.utils import parse_utc

    return parse_utc(text.strip()).replace(tzinfo=timezone.utc).isoformat()


def _prepare_nbgrader(
    submitted: Path, workdir: Path, released: list[str], roster: dict[str, str], out: TextIO | None
) -> Intake:
    """nbgrader's `submitted/<student>/<assignment>/<notebook>.ipynb`, laid out as `<student>/<notebook>.ipynb`
    with each notebook's assignment and each submission's `timestamp.txt` in the manifest."""
    notes: list[str] = []
    target = _fresh_target(workdir)
    target.mkdir()
    manifest: dict[str, dict] = {}
    assignments: dict[str, str] = {}
    chosen: dict[tuple[str, str], list[tuple[Upload, Path, str]]] = {}
    students: set[str] = set()
    handed_in: list[tuple[str, str, list[str], str]] = []  # (student, assignment folder, its notebooks, time)
    for student_dir in sorted(p for p in submitted.iterdir() if p.is_dir() and not p.name.startswith(".")):
        student = usable_student_id(student_dir.name)
        if student != student_dir.name:
            notes.append(f"nbgrader student {student_dir.name!r} is graded as {student!r} (letters, digits, . _ @ + -)")
        students.add(student)
        (target / student).mkdir(exist_ok=True)
        for folder in sorted(p for p in student_dir.iterdir() if p.is_dir() and not p.name.startswith(".")):
            stamp = folder / "timestamp.txt"
            when = ""
            if stamp.is_file():
                try:
                    when = nbgrader_timestamp(stamp.read_text(encoding="utf-8"))
                except (ValueError, OverflowError):
                    notes.append(f"{student}: {stamp.relative_to(submitted)} is not a time nbgrader can read; ignored")
            handed_in.append((student, folder.name, sorted(p.name for p in folder.glob("*.ipynb")), when))
            for path in sorted(folder.glob("*.ipynb")):
                notebook, _ = released_name(path.name, released)
                original = path.relative_to(submitted).as_posix()
                if notebook is None:
                    known = ", ".join(released)
                    notes.append(f"{student}: {original!r} is not a released notebook ({known}); not graded")
                    continue
                if assignments.setdefault(notebook, folder.name) != folder.name:
                    raise ValueError(
                        f"{notebook} is submitted in two nbgrader assignments ({assignments[notebook]} and "
                        f"{folder.name}); grade them one at a time (--notebook) from separate folders"
                    )
                size = 0 if path.is_symlink() else path.stat().st_size
                refused = _refusal(original, size, path.is_symlink(), in_archive=False)
                order = (path.lstat().st_mtime, duplicate_number(path.stem))
                upload = Upload(student, original, path.name, order, None, None, refused)
                chosen.setdefault((student, notebook), []).append((upload, path, when))
    # a student who handed in an assignment without one of its notebooks gets that notebook's row (0 points, the
    # reason); an assignment a student did not hand in has no row, as in nbgrader's gradebook
    for student, folder_name, found, when in handed_in:
        for notebook in sorted(n for n, a in assignments.items() if a == folder_name):
            if (student, notebook) not in chosen:
                others = f" (found {', '.join(found)})" if found else ""
                manifest[f"{student}/{notebook}"] = {
                    "original": "",
                    "late": None,
                    "note": "",
                    "problem": f"no file named {notebook}.ipynb in submitted/{student}/{folder_name}{others}",
                    "assignment": folder_name,
                }
                if when:
                    manifest[f"{student}/{notebook}"].update(submitted_at=when, time_source="nbgrader timestamp.txt")
    for (student, notebook), candidates in sorted(chosen.items()):
        latest, note = choose_latest([upload for upload, _, _ in candidates], notebook, kind="files")
        path, when = next((p, w) for u, p, w in candidates if u is latest)
        entry = {"original": latest.original, "late": None, "note": note, "problem": latest.refused}
        entry["assignment"] = assignments[notebook]
        if when:
            entry.update(submitted_at=when, time_source="nbgrader timestamp.txt")
        if latest.refused:
            notes.append(f"{student}/{notebook}: {latest.refused}")
        else:
            (target / student / f"{notebook}.ipynb").write_bytes(path.read_bytes())
        manifest[f"{student}/{notebook}"] = entry
    for student in sorted(set(roster.values()) - students):
        (target / student).mkdir(exist_ok=True)
        notes.append(f"roster: {student} submitted nothing")
    course = nbgrader_course(submitted)
    manifest[NBGRADER_KEY] = {"course": str(course) if course else "", "assignments": assignments}
    (target / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True), encoding="utf-8")
    named = ", ".join(f"{nb} ({a})" for nb, a in sorted(assignments.items())) or "none"
    notes.append(
        f"Intake: {len(manifest) - 1} notebook(s) of {len(students | set(roster.values()))} student(s) from nbgrader's "
        f"{submitted} (notebooks and their assignments: {named}) into {target}"
    )
    _say(notes, out)
    return Intake(target, notes)


def nbgrader_assignments(folder: Path) -> tuple[dict[str, str], Path | None]:
    """({notebook: nbgrader assignment}, the nbgrader course directory) of a folder laid out from nbgrader's
    layout; ({}, None) for any other folder."""
    entry = read_manifest(folder).get(NBGRADER_KEY) or {}
    course = entry.get("course") or ""
    return dict(entry.get("assignments") or {}), Path(course) if course else None


def _with_empty_students(
    source: Path, workdir: Path, missing: list[str], notes: list[str], out: TextIO | None
) -> Intake:
    """A copy of the student folders plus an empty folder for each roster student without one."""
    target = _fresh_target(workdir)
    shutil.copytree(source, target, symlinks=True)
    for student in missing:
        (target / student).mkdir(exist_ok=True)
    _say(notes, out)
    return Intake(target, notes)


def _fresh_target(workdir: Path) -> Path:
    """`<workdir>/intake/submissions`, emptied (not yet created): each intake starts from nothing."""
    target = Path(workdir) / INTAKE_DIR / "submissions"
    if target.exists():
        shutil.rmtree(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    return target


def _say(notes: list[str], out: TextIO | None) -> None:
    for note in notes if out else []:
        print(note, file=out, flush=True)


def read_manifest(folder: Path) -> dict[str, dict]:
    path = Path(folder) / MANIFEST
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
