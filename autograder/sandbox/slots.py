"""Worker slots: one unprivileged uid per concurrent sandbox, claimed host-wide."""

from __future__ import annotations

import fcntl
import os
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path

_slots_lock = threading.Lock()
_slots_used: set[int] = set()
_slots_owned: dict[int, int] = {}  # slot number -> open file descriptor holding its lock


def _own(number: int) -> bool:
    """Claim a slot number for this process for the rest of its life, host-wide.

    Several grading processes can share a machine (Dask workers, two instructors' runs), and
    a slot's uid is killed wholesale when a submission ends: two processes must never hand
    out the same uid. An flock on /tmp/autograder-slots-<euid>/<n>.lock does it; the kernel
    releases it when the process dies, however it dies."""
    if number in _slots_owned:
        return True
    folder = Path(tempfile.gettempdir()) / f"autograder-slots-{os.geteuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    fd = os.open(folder / f"{number}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return False
    _slots_owned[number] = fd
    return True


@contextmanager
def slot():
    """A slot number unused by the other sandboxes of this process and by every other grading
    process on this machine (uid = base + slot)."""
    with _slots_lock:
        number = next(i for i in range(10_000) if i not in _slots_used and _own(i))
        _slots_used.add(number)
    try:
        yield number
    finally:
        with _slots_lock:
            _slots_used.discard(number)


def free_slots(count: int) -> list[int]:
    """The numbers the next `count` calls of slot() would give now (claimed host-wide for this process, as slot()
    claims them, but not in use)."""
    with _slots_lock:
        numbers: list[int] = []
        for number in range(10_000):
            if len(numbers) == count:
                break
            if number not in _slots_used and _own(number):
                numbers.append(number)
        return numbers
