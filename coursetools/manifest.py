"""The chapter manifest (`chapters.yml`): the course's chapters and its calendar, read once.

One file says which chapters exist (lesson page, exercise notebook, the names the exercise asks
for) and when each opens to students and when its exercise is due. `publish` uses it to decide
what students may see at a given moment (a `Moment`): the chapters that have opened, and the
exercises whose deadline has passed, whose answers may then be published.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path

import yaml

from autograder.errors import UsageError
from coursetools import layout


class ManifestError(UsageError, ValueError):
    """chapters.yml is missing, malformed or inconsistent (the message says where)."""


@dataclass(frozen=True)
class Chapter:
    number: str  # "00".."99"
    lesson: str  # docname of the lesson page, as _toc.yml names it
    exercise: str | None  # notebook stem in solutions/ and chapters/, or None
    builds: tuple[str, ...]  # the functions and classes the exercise asks for
    opens: datetime | None
    due: datetime | None

    @property
    def exercise_page(self) -> str | None:
        """The docname of the exercise notebook's page (beside the lesson)."""
        if self.exercise is None:
            return None
        folder = self.lesson.rsplit("/", 1)[0] if "/" in self.lesson else ""
        return f"{folder}/{self.exercise}" if folder else self.exercise

    @property
    def pages(self) -> tuple[str, ...]:
        return (self.lesson,) if self.exercise_page is None else (self.lesson, self.exercise_page)


@dataclass(frozen=True)
class Moment:
    """What students may see at one moment of the term.

    `opened`: the chapters whose pages may be published; `past_due`: the exercises whose answers may
    be. `time` is the moment on the calendar (None for `--through NN` or for a course without one).
    """

    label: str
    opened: frozenset[str]
    past_due: frozenset[str]
    time: datetime | None = None


@dataclass(frozen=True)
class Manifest:
    term: str
    chapters: tuple[Chapter, ...]

    @property
    def has_calendar(self) -> bool:
        return any(c.opens is not None for c in self.chapters)

    def chapter(self, number: str) -> Chapter:
        for chapter in self.chapters:
            if chapter.number == number:
                return chapter
        raise ManifestError(
            f"chapters.yml has no chapter {number!r} (chapters: {', '.join(c.number for c in self.chapters)})"
        )

    def answered_by(self) -> dict[str, frozenset[str]]:
        """name -> the chapters whose exercise asks for it (a name may be asked twice: 02 and 03's attention)."""
        found: dict[str, set[str]] = {}
        for chapter in self.chapters:
            for name in chapter.builds:
                found.setdefault(name, set()).add(chapter.number)
        return {name: frozenset(numbers) for name, numbers in found.items()}

    def everything(self) -> Moment:
        """Every chapter open and every deadline passed: the course repository's own view."""
        numbers = frozenset(c.number for c in self.chapters)
        return Moment("every chapter (no calendar)", numbers, numbers)

    def through(self, number: str) -> Moment:
        """The moment chapter `number` opens: it and every earlier chapter open, the deadlines of the
        earlier ones passed, its own not."""
        self.chapter(number)
        opened = frozenset(c.number for c in self.chapters if c.number <= number)
        return Moment(f"through chapter {number}", opened, opened - {number})

    def at(self, time: datetime) -> Moment:
        """The moment `time` of the calendar."""
        if not self.has_calendar:
            raise ManifestError("chapters.yml sets no calendar (no `opens` dates)")
        opened = frozenset(c.number for c in self.chapters if c.opens is not None and c.opens <= time)
        past_due = frozenset(c.number for c in self.chapters if c.due is not None and c.due <= time)
        return Moment(f"as of {time.isoformat(timespec='minutes')}", opened, past_due & opened, time)


def _time(value: object, where: str) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, date):
        parsed = datetime(value.year, value.month, value.day)
    else:
        try:
            parsed = datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
        except ValueError:
            raise ManifestError(f"{where}: {value!r} is not an ISO 8601 time such as 2027-01-11T09:00") from None
    return parsed if parsed.tzinfo else parsed.astimezone()


def load(path: Path | None = None) -> Manifest:
    """Read and check chapters.yml."""
    path = Path(path or layout.MANIFEST_FILE)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except FileNotFoundError:
        raise ManifestError(f"{path} is missing: it lists the course's chapters") from None
    except yaml.YAMLError as exc:
        raise ManifestError(f"{path} is not valid YAML: {exc}") from None
    chapters = []
    for index, entry in enumerate(data.get("chapters") or []):
        where = f"{path.name}, chapter entry {index + 1}"
        if not isinstance(entry, dict):
            raise ManifestError(f"{where}: expected a mapping with number, lesson, exercise, builds, opens, due")
        unknown = set(entry) - {"number", "lesson", "exercise", "builds", "opens", "due"}
        if unknown:
            raise ManifestError(f"{where}: unknown keys {sorted(unknown)}")
        number = str(entry.get("number", ""))
        if not re.fullmatch(r"\d\d", number):
            raise ManifestError(
                f'{where}: number must be two digits in quotes, such as "03", not {entry.get("number")!r}'
            )
        where = f"{path.name}, chapter {number}"
        builds = entry.get("builds") or []
        if not isinstance(builds, list) or not all(isinstance(b, str) and b.isidentifier() for b in builds):
            raise ManifestError(f"{where}: builds must be a list of Python names")
        exercise = entry.get("exercise")
        if exercise is not None and not isinstance(exercise, str):
            raise ManifestError(f"{where}: exercise must be a notebook name or null")
        if bool(exercise) != bool(builds):
            raise ManifestError(
                f"{where}: an exercise needs `builds` (what it asks for), and `builds` needs an exercise"
            )
        chapter = Chapter(
            number,
            str(entry.get("lesson", "")),
            exercise,
            tuple(builds),
            _time(entry.get("opens"), f"{where}, opens"),
            _time(entry.get("due"), f"{where}, due"),
        )
        if not chapter.lesson:
            raise ManifestError(f"{where}: no lesson")
        if chapter.due is not None and exercise is None:
            raise ManifestError(f"{where}: a due date without an exercise")
        if chapter.due is not None and chapter.opens is not None and chapter.due < chapter.opens:
            raise ManifestError(f"{where}: due {chapter.due} is before opens {chapter.opens}")
        chapters.append(chapter)
    if not chapters:
        raise ManifestError(f"{path} lists no chapters")
    numbers = [c.number for c in chapters]
    if numbers != sorted(set(numbers)):
        raise ManifestError(f"{path.name}: chapter numbers must be unique and in order, got {numbers}")
    manifest = Manifest(str(data.get("term") or ""), tuple(chapters))
    if manifest.has_calendar:
        for chapter in chapters:
            if chapter.opens is None or (chapter.exercise and chapter.due is None):
                missing = "opens" if chapter.opens is None else "due"
                raise ManifestError(
                    f"{path.name}, chapter {chapter.number}: no `{missing}`, while other chapters have dates "
                    "(give every chapter its dates, or none)"
                )
    return manifest
