"""The records the grader passes between its stages: typed, picklable, JSON-serialisable.

A `Submission` (what `intake.collect` found for one student and notebook) and the source notebook make
a `Job` (with the sandbox's `Limits`), which `grading.execute` turns into a `Result` (per test cell a
`CellResult`; lateness, when a deadline was given, a `LateRecord`). Results are what the work dir keeps
(`store.gradebook`), what Dask ships back from a worker, and what feedback, export and report read.
`grade --verify` grades a sample again: a `Regrade` per submission, with a `CellDifference` for each cell
whose points differ (`<workdir>/verify.json`, which the report reads).

The bottom of the package with `model.notebooks`: it imports only the settings.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from autograder import config


@dataclass(frozen=True)
class Limits:
    """Resource limits of one submission's process (see config for the defaults and why)."""

    memory_bytes: int = field(default_factory=lambda: default_memory_bytes())
    cpu_seconds: int = config.SANDBOX_CPU_SECONDS
    processes: int = config.SANDBOX_PROCESSES
    file_bytes: int = config.SANDBOX_FILE_BYTES
    scratch_bytes: int = config.SANDBOX_SCRATCH_BYTES
    cell_timeout_s: float = config.CELL_TIMEOUT_S
    notebook_timeout_s: float = config.NOTEBOOK_TIMEOUT_S
    max_output_chars: int = config.MAX_OUTPUT_CHARS


def default_memory_bytes() -> int:
    """The address-space limit: none on a machine with an NVIDIA GPU (CUDA reserves tens of
    GB of address space at initialisation, so any useful RLIMIT_AS would make it fail)."""
    return 0 if os.path.exists("/dev/nvidiactl") else config.SANDBOX_MEMORY_BYTES


@dataclass(frozen=True)
class Submission:
    student: str
    notebook: str  # released notebook name, without .ipynb
    path: Path | None  # None when the student did not hand in this notebook
    problem: str | None = None  # why it cannot be graded, if known before running it
    sha256: str = ""  # of the submitted bytes ("" when there are none)
    note: str = ""  # how the file was matched to the notebook (renamed, latest of several uploads)
    lms_late: bool | None = None  # the LMS's own late mark (Canvas: `_late_` in the name); None: no mark
    # When the LMS says it was handed in (ISO 8601; nbgrader's timestamp.txt, Moodle's grading worksheet), and
    # where that came from; "" when it says nothing
    lms_time: str = ""
    lms_time_source: str = ""


@dataclass
class LateRecord:
    """When a submission was handed in, against which deadline and policy, and what that costs
    (grading.late.Lateness.assess). The time is kept so that grading again gives the same penalty."""

    submitted_at: str  # ISO time, "" when unknown
    source: str  # where the time came from: "timestamps CSV", "earlier grading", an LMS mark, the file's time
    deadline: str  # ISO time
    policy: str  # as given, e.g. "10%/day, max 3 days"
    late_days: int
    penalty: float  # a fraction of the score
    final_score: float  # score x (1 - penalty)


@dataclass(frozen=True)
class Job:
    submission: Submission
    source_path: Path  # solutions/<notebook>.ipynb
    limits: Limits = field(default_factory=Limits)
    sandboxed: bool = True  # False only when the instructor passed --no-sandbox
    harden: bool = True  # the runner's integrity checks (off only in tests that prove they matter)
    # with sandboxed False, as root: no bubblewrap, but a uid of its own (Gradescope's container, where bwrap fails)
    unprivileged: bool = False


@dataclass
class CellResult:
    grade_id: str
    points: float
    max_points: float
    message: str = ""  # why it lost points: the assertion message, never test source

    @property
    def passed(self) -> bool:
        return self.points >= self.max_points


@dataclass
class Result:
    student: str
    notebook: str
    score: float
    max_score: float
    cells: list[CellResult]
    reason: str = ""  # why the whole submission scored what it did, if not plain tests
    repairs: list[str] = field(default_factory=list)  # what the grader fixed or put back, and why
    submission_sha256: str = ""
    source_sha256: str = ""
    grader_version: str = config.GRADER_VERSION
    seconds: float = 0.0
    cells_seconds: float = 0.0  # of that, the time the notebook's own cells ran (the rest is the grader's overhead)
    internal_error: str = ""  # the grader failed (not the student): never stored as a grade
    executed: dict | None = None  # the executed notebook (contains hidden tests: instructor only)
    late: LateRecord | None = None  # only when `grade` was given a deadline

    def to_json(self) -> dict:
        data = asdict(self)
        data.pop("executed")
        return data

    @classmethod
    def from_json(cls, data: dict) -> Result:
        data = dict(data)
        data["cells"] = [CellResult(**c) for c in data["cells"]]
        data["late"] = LateRecord(**data["late"]) if data.get("late") else None  # older records: {}
        return cls(**data)


@dataclass(frozen=True)
class CellDifference:
    """A test cell whose points differ between the stored grading and the second one."""

    cell: str  # its grade_id
    first: float
    second: float


@dataclass(frozen=True)
class Regrade:
    """One submission graded again by `grade --verify`: the cells whose points differ (none: the grade repeats),
    or `error` when the grader itself failed the second time (then nothing was compared)."""

    student: str
    notebook: str
    differences: tuple[CellDifference, ...] = ()
    error: str = ""

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> Regrade:
        differences = tuple(CellDifference(**d) for d in data.get("differences", []))
        return cls(str(data["student"]), str(data["notebook"]), differences, str(data.get("error", "")))
