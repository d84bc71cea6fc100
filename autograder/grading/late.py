"""Late work: when each submission was handed in, how late it is, and the penalty.

    grade SUBMISSIONS --deadline 2026-12-01T23:59 --late-policy "10%/day, max 3 days"

A policy is "<P>%/day, max <N> days": every started day after the deadline costs P% of
the score, and a submission more than N days late gets no points (penalty 100%). Without
`--late-policy` the course's `config.LATE_POLICY` applies. The raw score is never changed:
the result record and the export keep it, next to `late_days`, `penalty` and `final_score`.

Where a submission's time comes from, first found wins:
1. `--timestamps CSV`, the LMS's export of submission times: columns `student`,
   `submitted_at` (ISO 8601), optionally `notebook`;
2. for an LMS export (autograder/intake/lms.py) that records when a submission was handed in, that
   time: nbgrader's `timestamp.txt` (written by `nbgrader collect` and `zip_collect`), Moodle's grading
   worksheet given as the roster (its "Last modified (submission)" column);
3. the submission time recorded the last time this same file (same SHA-256) was graded:
   grading again, even long after the deadline and without the CSV, gives the same penalty;
4. for an LMS export without times, the LMS's own late mark: Canvas puts `_late_` in the
   file name (computed against each student's own due date) but no time in its zip, so a marked
   file counts as 1 day late, with a warning to give --timestamps for the real number of days;
5. the file's modification time, with a warning (a copy or an unzip may have changed it).
When a student's folder has a file with `LATE` in its name and the time found says "on time",
a warning says so (the time wins; check it by hand).
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from autograder.errors import InputError, MissingInput
from autograder.model.records import LateRecord

_POLICY = re.compile(
    r"^\s*(?P<pct>\d+(?:\.\d+)?)\s*%\s*(?:/|per)\s*day\s*(?:,\s*max(?:imum)?\s*(?P<max>\d+)\s*days?)?\s*$",
    re.IGNORECASE,
)
DAY_S = 86_400


@dataclass(frozen=True)
class Policy:
    per_day: float  # fraction of the score lost per started day late
    max_days: int | None  # later than this: no points; None: no limit
    text: str = ""

    def penalty(self, late_days: int) -> float:
        if late_days <= 0:
            return 0.0
        if self.max_days is not None and late_days > self.max_days:
            return 1.0
        return min(1.0, round(self.per_day * late_days, 6))


def parse_policy(text: str) -> Policy:
    match = _POLICY.match(text or "")
    if not match:
        raise InputError(f"late policy {text!r} not understood: write it as '10%/day, max 3 days'")
    return Policy(float(match["pct"]) / 100, int(match["max"]) if match["max"] else None, text.strip())


def parse_time(text: str) -> datetime:
    """An ISO 8601 time; without a zone it is this machine's local time."""
    try:
        value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise InputError(
            f"{text!r} is not an ISO 8601 time such as 2027-02-01T09:00 (this machine's time zone unless one is given, "
            "as in 2027-02-01T09:00Z or 2027-02-01T09:00+01:00)"
        ) from None
    return value if value.tzinfo else value.astimezone()


def late_days(submitted: datetime, deadline: datetime) -> int:
    """Started days after the deadline (1 second late is 1 day late); 0 when on time."""
    seconds = (submitted - deadline).total_seconds()
    return 0 if seconds <= 0 else math.ceil(seconds / DAY_S)


def final_score(score: float, penalty: float) -> float:
    return round(score * (1 - penalty), 4)


def read_timestamps(path: Path) -> dict[tuple[str, str | None], datetime]:
    """{(student, notebook or None): time} from a CSV with student, submitted_at[, notebook]."""
    out = {}
    try:
        with Path(path).open(newline="", encoding="utf-8-sig") as handle:
            reader = csv.DictReader(handle)
            missing = {"student", "submitted_at"} - set(reader.fieldnames or [])
            if missing:
                raise InputError(
                    f"{path}: needs the columns student and submitted_at (missing {', '.join(sorted(missing))})"
                )
            for row in reader:
                if not (row.get("student") or "").strip() or not (row.get("submitted_at") or "").strip():
                    continue
                try:
                    when = parse_time(row["submitted_at"])
                except InputError as exc:
                    raise InputError(f"{path} line {reader.line_num}: {exc}") from None
                out[(row["student"].strip(), (row.get("notebook") or "").strip() or None)] = when
    except FileNotFoundError:
        raise MissingInput(f"--timestamps {path} does not exist") from None
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise InputError(f"--timestamps {path} cannot be read as a CSV file: {exc}") from None
    return out


@dataclass
class Lateness:
    deadline: datetime
    policy: Policy
    timestamps: dict[tuple[str, str | None], datetime] | None = None

    def recorded_time(
        self, student: str, notebook: str, previous: LateRecord | None, lms_time: str = "", lms_source: str = ""
    ) -> tuple[datetime, str] | None:
        """(time, where it came from) from the --timestamps CSV, the LMS's record or an earlier grading, if one
        has it."""
        if self.timestamps is not None:
            for key in ((student, notebook), (student, None)):
                if key in self.timestamps:
                    return self.timestamps[key], "timestamps CSV"
        if lms_time:
            return parse_time(lms_time), lms_source or "LMS export: submission time"
        if previous is not None and previous.submitted_at:
            return parse_time(previous.submitted_at), previous.source or "earlier grading"
        return None

    def file_time(self, student: str, notebook: str, path: Path | None) -> tuple[datetime | None, str, str]:
        """(the file's modification time, its source, a warning): the last resort."""
        if path is not None and Path(path).exists():
            when = datetime.fromtimestamp(Path(path).stat().st_mtime, tz=timezone.utc).astimezone()
            return (
                when,
                "file modification time",
                (
                    f"warning: {student}/{notebook}: no submission time given (--timestamps); using the file's "
                    f"modification time {when.isoformat(timespec='seconds')}"
                ),
            )
        return None, "", f"warning: {student}/{notebook}: no submission time found; not counted late"

    def assess(
        self,
        student: str,
        notebook: str,
        path: Path | None,
        score: float,
        previous: LateRecord | None = None,
        lms_late: bool | None = None,
        lms_time: str = "",
        lms_source: str = "",
    ) -> tuple[LateRecord, list[str]]:
        """The `late` record of one result, and any warnings.

        `lms_time` (with `lms_source`, where it came from) is the time the LMS recorded, when it records one.
        `lms_late` is the LMS export's own mark (autograder/intake/lms.py); it stands in for a time
        when neither --timestamps nor an earlier grading gives one: the file's modification time
        after unzipping is the time the zip was made, not when the student handed in. Without a
        time, late counts as 1 day (the least it can be) and not late as on time."""
        recorded = self.recorded_time(student, notebook, previous, lms_time, lms_source)
        warnings: list[str] = []
        if recorded is None and lms_late is not None:
            when, source, days = (
                None,
                "LMS export: marked late" if lms_late else "LMS export: not marked late",
                int(lms_late),
            )
            if lms_late:
                warnings.append(
                    f"warning: {student}/{notebook}: the LMS marked it late but gives no time; counted 1 day late "
                    "(give --timestamps for the real number of days)"
                )
        else:
            when, source, warning = (*recorded, "") if recorded else self.file_time(student, notebook, path)
            warnings += [warning] if warning else []
            days = late_days(when, self.deadline) if when else 0
            if (
                path is not None
                and days == 0
                and any("LATE" in p.name for p in Path(path).parent.iterdir() if p.is_file())
            ):
                warnings.append(
                    f"warning: {student}/{notebook}: the LMS marked a file LATE, but its time ({source}) is on time; "
                    "check it"
                )
        penalty = self.policy.penalty(days)
        record = LateRecord(
            submitted_at=when.isoformat(timespec="seconds") if when else "",
            source=source,
            deadline=self.deadline.isoformat(timespec="seconds"),
            policy=self.policy.text,
            late_days=days,
            penalty=penalty,
            final_score=final_score(score, penalty),
        )
        return record, warnings
