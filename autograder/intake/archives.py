"""The files of a zip or of an unzipped LMS folder, each with its bytes or the reason it was refused.

Refused with a reason, never extracted: paths that climb out (`../`, absolute), links, nested archives, files that
are not notebooks, files over `config.MAX_SUBMISSION_BYTES` (the limit of every submission, however it comes), and
everything after `config.MAX_INTAKE_BYTES` in all. Each member is read on its own: a member whose bytes are damaged
(its header lies about its size or its CRC, its compression is unknown) is refused with that reason, and the run
goes on with the other members. Only a file that is no zip at all stops the run: it is the instructor's input, not
a student's.
"""

from __future__ import annotations

import re
import stat
import struct
import zipfile
import zlib
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path, PurePosixPath

from autograder import config
from autograder.errors import InputError
from autograder.intake.names import short

# what reading one damaged member can raise (zipfile: BadZipFile for a bad CRC or a short member, EOFError,
# zlib.error, NotImplementedError for an unknown compression, RuntimeError for an encrypted one)
DAMAGED = (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError, OSError, ValueError)


@dataclass
class Entry:
    """One file of a zip or of an unzipped LMS folder: bytes are None when it is refused."""

    path: PurePosixPath
    data: bytes | None
    refused: str
    mtime: float = 0.0  # as the archive or the file system has it (orders a student's uploads in a Moodle export)


def climbs_out(path: PurePosixPath) -> bool:
    """Absolute, `..` anywhere, or a Windows drive (`C:/...`): extracting it could land outside."""
    return path.is_absolute() or ".." in path.parts or bool(re.match(r"^[A-Za-z]:", str(path)))


def over_the_limit(name: str, size: int) -> str:
    """Why a file of `size` bytes is refused ("" when it is not): the one limit of a submission."""
    if size <= config.MAX_SUBMISSION_BYTES:
        return ""
    return (
        f"refused {short(name)}: {size / 2**20:.1f} MiB, over the limit of {config.MAX_SUBMISSION_BYTES / 2**20:g} MiB"
    )


def refusal(name: str, size: int, is_link: bool, in_archive: bool) -> str:
    """Why a file of a zip or of a flat LMS folder is not taken ("" when it is)."""
    suffix = PurePosixPath(name).suffix.lower()
    if is_link:
        return f"refused {short(name)}: a link, not a file"
    if in_archive and suffix in {".zip", ".tar", ".gz", ".tgz", ".7z", ".rar"}:
        return f"refused {short(name)}: archives inside the archive are not opened; submit the .ipynb itself"
    if suffix != ".ipynb":
        return f"refused {short(name)}: not a Jupyter notebook (.ipynb)"
    return over_the_limit(name, size)


def declared_members(archive: Path) -> int:
    """At most how many members the zip's directory can hold, read from its end record (zip64 too) before Python
    parses the directory: the count it declares, or the directory's size over the smallest entry (46 bytes), whichever
    is larger (a directory that lies about its count still has its size). 0 when there is no end record."""
    with Path(archive).open("rb") as handle:
        size = handle.seek(0, 2)
        handle.seek(max(0, size - (1 << 16) - 22))
        tail = handle.read()
        at = tail.rfind(b"PK\x05\x06")
        if at < 0 or len(tail) < at + 22:
            return 0
        count, directory = struct.unpack("<HI", tail[at + 10 : at + 16])
        locator = tail[at - 20 : at] if at >= 20 else b""
        if locator[:4] == b"PK\x06\x07":  # zip64: the counts are in its own end record
            handle.seek(struct.unpack("<Q", locator[8:16])[0])
            record = handle.read(56)
            if record[:4] == b"PK\x06\x06" and len(record) == 56:
                count, directory = struct.unpack("<QQ", record[32:48])
    return max(count, directory // 46)


def zip_entries(archive: Path) -> list[Entry]:
    """Every file of the zip, with its bytes or why it was refused."""
    try:
        members = declared_members(archive)
    except (OSError, struct.error) as exc:
        raise InputError(f"{archive} is not a readable zip file ({exc})") from exc
    if members > config.MAX_ZIP_MEMBERS:
        raise InputError(
            f"{archive} holds up to {members:,} members, more than the {config.MAX_ZIP_MEMBERS:,} an export of a class "
            "can have: is it the right file?"
        )
    try:
        zf = zipfile.ZipFile(archive)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise InputError(f"{archive} is not a readable zip file ({exc})") from exc
    entries: list[Entry] = []
    total = 0
    with zf:
        for info in zf.infolist():
            if info.is_dir():
                continue
            path = PurePosixPath(info.filename.replace("\\", "/"))
            if climbs_out(path):
                entries.append(
                    Entry(path, None, f"refused {short(info.filename)}: its path leaves the submissions folder")
                )
                continue
            try:
                mtime = datetime(*info.date_time).timestamp()
            except (ValueError, OverflowError):
                mtime = 0.0
            if path.name.startswith(".") or path.parts[0] == "__MACOSX":
                continue  # macOS and editor debris
            refused = refusal(info.filename, info.file_size, stat.S_ISLNK(info.external_attr >> 16), in_archive=True)
            if not refused and total + info.file_size > config.MAX_INTAKE_BYTES:
                limit = config.MAX_INTAKE_BYTES / 2**30
                refused = f"refused {short(info.filename)}: the archive holds more than {limit:g} GiB of notebooks"
            data = None if refused else _member(zf, info)
            if isinstance(data, str):
                refused, data = data, None
            if data is not None:
                total += len(data)
            entries.append(Entry(path, data, refused, mtime))
    return entries


def _member(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes | str:
    """The member's bytes, or why they cannot be had. At most the limit is read: a header that lies about the size
    cannot flood memory or the disk."""
    try:
        with zf.open(info) as handle:
            data = handle.read(config.MAX_SUBMISSION_BYTES + 1)
    except DAMAGED as exc:
        damage = f"{type(exc).__name__}: {str(exc)[:200]}"
        return f"refused {short(info.filename)}: the zip's copy of it is damaged ({damage}); upload it again"
    if len(data) > config.MAX_SUBMISSION_BYTES:
        return over_the_limit(info.filename, len(data))
    return data


def folder_entries(folder: Path, is_moodle_folder: re.Pattern[str]) -> list[Entry]:
    """The flat files of an unzipped LMS export, and the files inside its Moodle folders."""
    files = [p for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")]
    for moodle in (p for p in folder.iterdir() if p.is_dir() and not p.is_symlink() and is_moodle_folder.match(p.name)):
        files += [p for p in moodle.rglob("*") if (p.is_file() or p.is_symlink()) and not p.name.startswith(".")]
    entries: list[Entry] = []
    for path in sorted(files):
        relative = PurePosixPath(path.relative_to(folder).as_posix())
        try:
            size = 0 if path.is_symlink() else path.stat().st_size
            refused = refusal(path.name, size, path.is_symlink(), in_archive=False)
            entries.append(Entry(relative, None if refused else path.read_bytes(), refused, path.lstat().st_mtime))
        except OSError as exc:
            entries.append(Entry(relative, None, f"refused {short(path.name)}: it cannot be read ({exc.strerror})"))
    return entries
