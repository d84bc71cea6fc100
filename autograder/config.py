"""Every setting of the autograder, in one place.

Paths default to this repository's layout; the CLI lets instructors override the
work dir and the gradebook URL, nothing else needs changing per course run.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
# nbgrader source notebooks: solutions, visible tests and hidden tests.
SOLUTIONS_DIR = REPO_ROOT / "solutions"
# The book's layout (chapters/, chapters.yml, course/, the public release) is the course tooling's:
# coursetools/layout.py. The grader grades against SOLUTIONS_DIR only.

# All grading state lives under one work dir (git-ignored).
DEFAULT_WORKDIR = Path("grading")
GRADEBOOK_FILE = "gradebook.db"
RESULTS_DIR = "results"  # results/<student>/<notebook>.json: the record of one grading
EXECUTED_DIR = "autograded"  # autograded/<student>/<notebook>.ipynb: contains hidden tests!
VERIFY_FILE = "verify.json"  # what `grade --verify` found (grading/verify.py), read by the class report

COURSE_ID = "attention-course"
KERNEL_NAME = "python3"

# nbgrader's default is 30 s per cell; our cells take well under a second, so 60 s
# only ever stops an infinite loop (the cell then fails with a time-limit error).
CELL_TIMEOUT_S = 60

# --- the sandbox of student code (autograder/sandbox/) -------------------------------
# Address space: importing torch needs about 1 GB of it; 4 GiB leaves room for the
# exercises and stops a runaway allocation long before the machine swaps. Set to 0 on a
# GPU machine (CUDA reserves tens of GB of address space); `--memory` changes it.
SANDBOX_MEMORY_BYTES = 4 << 30
SANDBOX_CPU_SECONDS = 600  # CPU time of the whole process (RLIMIT_CPU)
SANDBOX_PROCESSES = 64  # processes of the sandbox's uid (RLIMIT_NPROC): stops a fork bomb
SANDBOX_FILE_BYTES = 64 << 20  # largest file it may write (RLIMIT_FSIZE)
SANDBOX_SCRATCH_BYTES = 256 << 20  # its private, RAM-backed /tmp (the only writable place)
SANDBOX_UID_BASE = 200_000  # root drops to uid BASE + worker slot: a uid that owns nothing
NOTEBOOK_TIMEOUT_S = 600  # wall clock for a whole notebook
# The judge (autograder/judge): one warm process per grading process decides the verdicts of hidden tests
# written as probe + judge. Its start (importing torch) and one verdict may take this long.
JUDGE_START_TIMEOUT_S = 120
JUDGE_VERDICT_TIMEOUT_S = 60
# One warm sandbox per worker that forks a child per submission (autograder/sandbox/forkserver.py,
# ForkServer): torch is imported once per worker, not once per submission. Used when the
# grader runs as root (each child needs a uid of its own); False: a new sandbox per submission.
FORK_SERVER = os.environ.get("AUTOGRADER_FORK_SERVER", "1") != "0"  # AUTOGRADER_FORK_SERVER=0: always a fresh sandbox
MAX_OUTPUT_CHARS = 100_000  # stdout/stderr kept per cell; the rest is counted, not kept
# What the grader keeps of a notebook's outputs (grading/execute.py) and what a feedback page shows
# (reporting/feedback.py): one display output (a figure is ~50-500 KB of base64), all the outputs of one
# notebook, and the cells and characters of one page (rendering costs ~10 ms a cell: 50,000 cells took minutes).
MAX_DISPLAY_OUTPUT_CHARS = 1_000_000
MAX_NOTEBOOK_OUTPUT_CHARS = 4_000_000
FEEDBACK_MAX_CELLS = 500
FEEDBACK_MAX_CHARS = 4_000_000
MAX_MESSAGE_CHARS = 400  # one failure message or repair note, on a feedback page, the report and Gradescope
# One budget of CPU seconds per feedback page for everything that converts student text: Markdown (mistune is
# quadratic on `[[[[...`) and formulas (text/latex outputs, Markdown math); what is left when it runs out is shown
# as text, and the page says so. A formula longer than FEEDBACK_MAX_FORMULA_CHARS is shown as its TeX source without
# being converted: latex2mathml took ~0.2 CPU s for 10,000 characters of the worst input measured and 43 s for
# 500,000 (issue 39); the course's longest formula is ~130.
FEEDBACK_CONVERT_CPU_SECONDS = 60
FEEDBACK_MAX_FORMULA_CHARS = 10_000
STARTUP_TIMEOUT_S = 120  # the grader's kernel must be ready (torch imported) within this
CELL_KILL_GRACE_S = 5  # after its time limit a cell gets this long to stop before a kill

# What `grade` accepts from an instructor (autograder/intake/): one notebook over this size is
# refused with a reason (ours are ~100 KB with outputs; a notebook full of images is a few MB), however it
# comes (a folder, a zip, an LMS export, nbgrader's course), and a zip is not unpacked past this many bytes of
# notebooks in all. A notebook's JSON nests about 6 levels (cells, outputs, data); one nested deeper than
# MAX_NOTEBOOK_DEPTH is refused before it is decoded.
MAX_SUBMISSION_BYTES = 20 << 20
MAX_INTAKE_BYTES = 4 << 30
MAX_NOTEBOOK_DEPTH = 100
# Counts, checked before anything is listed or parsed: members of one zip (from its end record: 20,000 uploads of
# one notebook are taken, a zip declaring millions of members is refused before Python reads its directory), and
# files looked at in one student's folder (a folder holding more is that student's problem).
MAX_ZIP_MEMBERS = 100_000
MAX_FILES_PER_STUDENT = 1000

# Dask (autograder/grading/pools.py, `grade --scheduler`): how long to wait for a scheduler, and how
# many times a submission may take its worker down with it before it counts as a grader failure
# (Dask's default, 3, would restart workers three times for one submission that kills them).
DASK_CONNECT_TIMEOUT_S = 20
DASK_ALLOWED_FAILURES = 1

# Late work (autograder/grading/late.py): the policy `grade --deadline` applies unless --late-policy is given.
LATE_POLICY = "10%/day, max 3 days"

# Bump when the way a score is computed changes: cached results of an older
# version are then graded again instead of reused.
GRADER_VERSION = "2"

# Environment of the grading kernels and judges: deterministic hashing, no GUI backend,
# no thread oversubscription when several kernels share the cores, and AUTOGRADER=1, which
# a notebook's ungraded demonstration (chapter 09's training run) reads to skip itself.
KERNEL_ENV = {
    "PYTHONHASHSEED": "0",
    "MPLBACKEND": "Agg",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "AUTOGRADER": "1",
}


def default_workers() -> int:
    """One kernel per core: grading is CPU-bound (each kernel imports torch)."""
    return max(1, os.cpu_count() or 1)


def gradebook_url(workdir: Path, db_url: str | None = None) -> str:
    """The SQLAlchemy URL of the gradebook: SQLite in the work dir unless one is given."""
    if db_url:
        return db_url
    return f"sqlite:///{(Path(workdir) / GRADEBOOK_FILE).resolve()}"
