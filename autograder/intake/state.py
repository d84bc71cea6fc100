"""The intake, laid out once: what `grade` was given and how it became students and notebooks.

`grade` lays its input out once (a folder, a zip, an LMS export, an nbgrader course) and writes this record into
the work dir, `<workdir>/intake/state.json`. `feedback`, `export`, `verify` (and every later command) read it
instead of laying the input out again with their own flags: the student `grade` named `jdoe` from a roster is
`jdoe` for `feedback` too, which has no `--roster`. A command given another input than the one graded says so
rather than finding nothing to do.

The record is written atomically (readers see the old one or the new one) and refused loudly when it cannot be
read: a corrupt record read as "nothing" would make `feedback` write nothing and exit 0.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from autograder.errors import UsageError
from autograder.model.files import file_sha256

STATE_FILE = Path("intake") / "state.json"  # in the work dir
FORMAT = 1  # of state.json; a record of another format is refused with how to make a new one


class IntakeStateError(UsageError, ValueError):
    """The work dir's intake record is missing, corrupt, or of another input than the one given."""


@dataclass
class NotebookIntake:
    """How one (student, notebook) came in: the file chosen, how it was matched, what the LMS said of it."""

    original: str = ""  # its name in the export ("" when nothing was handed in)
    late: bool | None = None  # the LMS's late mark; None when the export has none
    note: str = ""  # how it was matched (a renamed file, the latest of several uploads)
    problem: str = ""  # why it cannot be graded (refused, damaged, missing): 0 points with this reason
    submitted_at: str = ""  # ISO time from the LMS or nbgrader, "" when unknown
    time_source: str = ""
    assignment: str = ""  # nbgrader's assignment it was submitted in


@dataclass
class NbgraderCourse:
    course: str  # the course directory ("" when only `submitted/` was given)
    assignments: dict[str, str]  # notebook -> nbgrader assignment


@dataclass
class IntakeState:
    """The laid-out intake. `folder` holds one folder per student (`students` maps each student id to its folder's
    name there: the same name, except for a folder given in place whose name was not a usable id)."""

    source: Path  # what `grade` was given, resolved
    source_sha256: str  # of a zip: its bytes; "" for a folder (its files are checked one by one)
    folder: Path  # what `collect` reads
    students: dict[str, str]  # student id -> its folder in `folder` ("" when nothing was handed in)
    notebooks: dict[str, NotebookIntake] = field(default_factory=dict)  # "student/notebook" -> how it came in
    lms_ids: dict[str, str] = field(default_factory=dict)  # student id -> Canvas user id / Moodle participant id
    nbgrader: NbgraderCourse | None = None
    roster: str = ""  # the roster given to grade, resolved ("" for none)
    notes: list[str] = field(default_factory=list)  # printed once by grade
    # student -> why each of their files was not taken, for a student none of whose files is a notebook: their row
    # says it (a zip inside the zip, a file of no notebook's name or cells), not only "nothing was submitted"
    refused: dict[str, list[str]] = field(default_factory=dict)

    def entry(self, student: str, notebook: str) -> NotebookIntake | None:
        return self.notebooks.get(f"{student}/{notebook}")

    def check_input(self, given: Path | None, command: str) -> None:
        """Refuse with the reason when `given` is not the input this intake was laid out from (None: nothing given,
        the graded input is meant)."""
        if given is None:
            return
        resolved = Path(given).resolve()
        if resolved == self.folder.resolve():
            return  # the laid-out folder itself
        if resolved != self.source:
            raise IntakeStateError(
                f"{command} was given {given}, but this work dir holds the grading of {self.source}: give that "
                f"(or nothing), or the --workdir in which {given} was graded"
            )
        if self.source_sha256 and resolved.is_file() and file_sha256(resolved) != self.source_sha256:
            raise IntakeStateError(
                f"{given} changed since it was graded (another download?): run `grade {given}` again first"
            )


def state_path(workdir: Path) -> Path:
    return Path(workdir) / STATE_FILE


def save(state: IntakeState, workdir: Path) -> Path:
    """Write the record atomically: a run killed mid-write leaves the previous record, never half of one. (The
    gradebook's atomic_write is a layer above the intake; this is the same three steps.)"""
    path = state_path(workdir)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = asdict(state)
    workdir = Path(workdir).resolve()
    folder = state.folder.resolve()
    # inside the work dir the folder is kept relative, so a copied or moved work dir still finds its own
    data["folder"] = str(folder.relative_to(workdir)) if folder.is_relative_to(workdir) else str(folder)
    data["source"] = str(state.source)
    data["format"] = FORMAT
    handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=".state-", suffix=".tmp")
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        json.dump(data, out, indent=1, sort_keys=True, ensure_ascii=False)
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)
    return path


def load(workdir: Path) -> IntakeState | None:
    """The work dir's intake record; None when nothing was graded there; IntakeStateError when it is corrupt."""
    path = state_path(workdir)
    if not path.exists():
        return None
    fix = f"run `grade` on the submissions again to lay them out anew (it rewrites {path})"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format") != FORMAT:
            raise IntakeStateError(f"{path} is of another format ({data.get('format')!r}, not {FORMAT}): {fix}")
        folder = Path(data["folder"])
        nbgrader = data.get("nbgrader")
        return IntakeState(
            source=Path(data["source"]),
            source_sha256=str(data["source_sha256"]),
            folder=folder if folder.is_absolute() else Path(workdir) / folder,
            students={str(k): str(v) for k, v in data["students"].items()},
            notebooks={str(k): NotebookIntake(**v) for k, v in data["notebooks"].items()},
            lms_ids={str(k): str(v) for k, v in data["lms_ids"].items()},
            nbgrader=NbgraderCourse(str(nbgrader["course"]), dict(nbgrader["assignments"])) if nbgrader else None,
            roster=str(data["roster"]),
            notes=[str(n) for n in data["notes"]],
            refused={str(k): [str(w) for w in v] for k, v in data.get("refused", {}).items()},  # a record before it
        )
    except IntakeStateError:
        raise
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise IntakeStateError(f"{path} cannot be read ({type(exc).__name__}: {exc}): {fix}") from None


def lms_ids(workdir: Path) -> dict[str, str]:
    """{student: the LMS's id of them} as `grade` read them from the export ({} when nothing was graded here): what
    `export --format canvas|moodle` writes into the ID / Identifier column when no roster is given."""
    state = load(workdir)
    return dict(state.lms_ids) if state else {}
