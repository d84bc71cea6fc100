"""What instructors hand in: a folder, a zip, or an LMS export, laid out as SUBMISSIONS/<student>/<notebook>.ipynb.

    grade submissions.zip --roster roster.csv

`prepare` turns any of these into the one layout `collect` reads:
- a folder of student folders (`alice/02_dot_product_attention.ipynb`): used in place;
- a zip of such folders, or a zip / a folder of flat LMS files: unpacked into `<workdir>/intake/`.

Canvas's "Download submissions" zip holds flat files named (canvas-lms, ContentZipper)

    <sortable name>[_late]_<user id>_<attachment id>_<file name as uploaded>
    doejohn_12345_67890_02_dot_product_attention.ipynb
    doejohn_late_12345_67991_02_dot_product_attention-1.ipynb     (a re-upload, after the due date)

The student becomes `<sortable name>-<user id>` (two students may share a name, never an id), or
the roster's name for that id. The uploaded file name is matched to a released notebook after
removing what browsers and LMSs append (`-1`, ` (1)`, a different case), with a note; of several
uploads for one notebook the latest wins (highest attachment id, which Canvas assigns in upload
order). Canvas writes no submission time into the zip (its entries carry the time the zip was
made), only the `late` mark, computed against each student's own due date: the time itself comes
from `--timestamps`, and without it a file marked late counts as 1 day late, with a warning.

Refused with a reason, never extracted: paths that climb out (`../`, absolute), links, nested
zips, files that are not notebooks, files over `config.MAX_SUBMISSION_BYTES`, and everything
after `config.MAX_INTAKE_BYTES` in all. A refused notebook of a known student still gives that
student a row with 0 points and the reason.

The laid-out folder carries a manifest, `.intake.json`, that `collect` reads: per (student,
notebook) the original file name, the note on how it was matched, the late mark, and refusals.
"""

from __future__ import annotations

import csv
import json
import re
import shutil
import stat
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TextIO

from autograder import config

MANIFEST = ".intake.json"
INTAKE_DIR = "intake"

# <name>[_late]_<user id>_<attachment id>_<file>; the name is optional (anonymous grading).
_CANVAS = re.compile(
    r"^(?:(?P<name>\w+?)_)??(?:(?P<late>late)_)?(?P<user>\d+)_(?P<attachment>\d+)_(?P<file>.+)$", re.IGNORECASE
)
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


def read_roster(path: Path) -> dict[str, str]:
    """{LMS user id: student} from a CSV with columns `id` and `student`, or Canvas's gradebook
    export (columns `ID` and `SIS Login ID`, else `Student`; its "Points Possible" row is skipped)."""
    with Path(path).open(newline="", encoding="utf-8-sig") as handle:
        rows = list(csv.DictReader(handle))
    if not rows:
        raise ValueError(f"roster {path} is empty")
    columns = {name.strip().lower(): name for name in rows[0]}
    id_col = columns.get("id")
    name_col = columns.get("student") if "sis login id" not in columns else columns["sis login id"]
    if not id_col or not name_col:
        raise ValueError(f"roster {path}: needs the columns id and student (or Canvas's ID and SIS Login ID / Student)")
    roster = {}
    for row in rows:
        lms_id, name = (row.get(id_col) or "").strip(), (row.get(name_col) or "").strip()
        if lms_id.isdigit() and name:
            roster[lms_id] = usable_student_id(name)
    return roster


def _is_lms_folder(folder: Path) -> bool:
    """A folder of flat files (an unzipped LMS export), rather than one folder per student."""
    return any(p.is_file() and not p.name.startswith(".") for p in folder.iterdir())


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


def _zip_entries(archive: Path) -> list[tuple[PurePosixPath, bytes | None, str]]:
    """(path inside, bytes, refusal) for every file of the zip; bytes are None when refused."""
    entries: list[tuple[PurePosixPath, bytes | None, str]] = []
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
                entries.append((path, None, f"refused {info.filename!r}: its path leaves the submissions folder"))
                continue
            if path.name.startswith(".") or path.parts[0] == "__MACOSX":
                continue  # macOS and editor debris
            refused = _refusal(info.filename, info.file_size, stat.S_ISLNK(info.external_attr >> 16), in_archive=True)
            if not refused and total + info.file_size > config.MAX_INTAKE_BYTES:
                limit = config.MAX_INTAKE_BYTES / 2**30
                refused = f"refused {info.filename!r}: the archive holds more than {limit:g} GiB of notebooks"
            if refused:
                entries.append((path, None, refused))
                continue
            with zf.open(info) as handle:  # read at most the limit: a lying header cannot flood the disk
                data = handle.read(config.MAX_SUBMISSION_BYTES + 1)
            if len(data) > config.MAX_SUBMISSION_BYTES:
                entries.append(
                    (
                        path,
                        None,
                        f"refused {info.filename!r}: over the limit of {config.MAX_SUBMISSION_BYTES / 2**20:g} MiB",
                    )
                )
                continue
            total += len(data)
            entries.append((path, data, ""))
    return entries


def _folder_entries(folder: Path) -> list[tuple[PurePosixPath, bytes | None, str]]:
    entries: list[tuple[PurePosixPath, bytes | None, str]] = []
    for path in sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")):
        refused = _refusal(path.name, path.stat().st_size, path.is_symlink(), in_archive=False)
        entries.append((PurePosixPath(path.name), None if refused else path.read_bytes(), refused))
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


def canvas_user_id(student: str) -> str:
    """The Canvas user id inside a student id made by _canvas_student, or "" (`export --format canvas`)."""
    found = _CANVAS_STUDENT_SUFFIX.search(student)
    return found.group(1) if found else ""


def _upload(path: PurePosixPath, data: bytes | None, refused: str, roster: dict[str, str]) -> Upload | None:
    """Whose file this is, from a folder (`alice/x.ipynb`) or a Canvas name; None if nobody's."""
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
    for path, data, refused in entries:
        if _climbs_out(path):  # nobody's: never a folder named after a path that climbs out
            notes.append(refused)
            continue
        upload = _upload(path, data, refused, roster)
        if upload is None:
            notes.append(
                f"refused {str(path)!r}: whose is it? Neither in a student's folder nor named by the LMS "
                "(name_userid_fileid_file)"
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
    for (student, notebook), candidates in sorted(chosen.items()):
        latest, note = choose_latest(candidates, notebook)
        entry = {"original": latest.original, "late": latest.late, "note": note, "problem": ""}
        (target / student).mkdir(exist_ok=True)
        if latest.refused:
            entry["problem"] = latest.refused
            notes.append(f"{student}/{notebook}: {latest.refused}")
        else:
            (target / student / f"{notebook}.ipynb").write_bytes(latest.data or b"")
        manifest[f"{student}/{notebook}"] = entry
    for student in sorted(set(roster.values()) - {u.student for u in uploads}):
        (target / student).mkdir(exist_ok=True)
        notes.append(f"roster: {student} submitted nothing")
    (target / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True), encoding="utf-8")
    students = len({u.student for u in uploads} | set(roster.values()))
    notes.append(f"Intake: {len(manifest)} notebook(s) of {students} student(s) from {source.name} into {target}")
    _say(notes, out)
    return Intake(target, notes)


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
