"""The one error edge: what the user gave is wrong, or the grader is.

`UsageError` is a problem with what the user gave: an argument, a file, a folder, a server they named, the course's
own sources. Its message says what is wrong and how to fix it; `cli.main` prints it as `error: <message>` and
exits 2 (4 for `NothingDone`), without a traceback. Any other exception is a bug in this package and shows its
traceback (as pypa/build does): a message cannot help there, and the traceback is what a bug report needs.

Each module's own errors subclass it (`SourceError`, `PublishError`, `ManifestError`, `CourseCodeError`,
`IntakeStateError`, `SandboxUnavailable`, `WorkdirInUse`, `OtherClass`); the four below are for the rest. Each
keeps the built-in base the code raised before, so an `except ValueError` (or `FileNotFoundError`,
`ConnectionError`) written for it still catches it.

The bottom of the package with `config`: it imports nothing.
"""

from __future__ import annotations


class UsageError(Exception):
    """A problem with what the user gave (the message says what and how to fix it), never a bug of the grader."""


class InputError(UsageError, ValueError):
    """A value or a file the user gave cannot be read, or means nothing here: a time, a late policy, a roster,
    a zip, a notebook or student name."""


class MissingInput(UsageError, FileNotFoundError):
    """Something the user named is not there, or not yet: a submissions folder, a roster, a source notebook, the
    results or gradebook an earlier `grade` writes."""


class NothingDone(UsageError):
    """The command ran and did nothing: no notebook to grade in the input, no student to write. `cli.main` prints
    the reason and exits 4, so that a script tells such a run from success (0) and from a mistyped argument (2)."""


class Unreachable(UsageError, ConnectionError):
    """A server the user named cannot be reached: a Dask scheduler, the gradebook's database."""
