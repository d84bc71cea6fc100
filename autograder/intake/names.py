"""Names: a student id made from any name, a submitted file's name matched to a released notebook, and the one
upload that counts when there are several.

Every intake path (folders, zips, Canvas, Moodle, nbgrader) makes its student ids and picks its files here.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

# Student ids become folder names and gradebook keys: keep them boring.
STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,99}$")
MAX_STUDENT_ID = 100
MAX_NAME_IN_NOTE = 120  # characters of a file name quoted in a note (a zip's names may be 65,535 bytes)
LISTED_UPLOADS = 3  # earlier uploads named in a note; beyond, they are counted

_UNUSABLE_ID_CHARS = re.compile(r"[^A-Za-z0-9._@+-]+")
# What browsers and LMSs append to a name they already have: "name (1)", "name-1", "name_1", "Copy of name".
_DUPLICATE_SUFFIX = re.compile(r"(?:\s*\(\d+\)|-\d+|_\d+)$")
_COPY_PREFIX = re.compile(r"^copy of\s+", re.IGNORECASE)


@dataclass
class Upload:
    """One file of an LMS export or a student's folder, before it is matched to a notebook."""

    student: str
    original: str  # its name in the export
    uploaded_as: str  # the name the student gave it
    order: tuple  # larger = later: (attachment id,) or (modification time, suffix)
    late: bool | None  # the LMS's late mark; None when the export has none
    data: bytes | None = None
    refused: str = ""  # why it was not taken


def usable_student_id(text: str, keep: str = "") -> str:
    """A name made into a gradebook key: letters, digits, . _ @ + -, starting with a letter or a digit, at most 100
    characters. Accents are dropped (`Zoë` -> `Zoe`), anything else unusable becomes `-` (`@Mallory` -> `Mallory`,
    `+1+1` -> `1+1`). `keep` (an LMS id) is appended as `-<keep>` and never cut: the name is cut instead, so two
    long names that differ only in their ids stay two students."""
    # a character NFKD cannot take to ASCII (Ø, 王) leaves a mark, so that it still separates words
    ascii_text = "".join(
        c if c.isascii() else "" if unicodedata.combining(c) else " " for c in unicodedata.normalize("NFKD", text)
    )
    name = _UNUSABLE_ID_CHARS.sub("-", ascii_text.strip())
    name = re.sub(r"^[^A-Za-z0-9]+", "", name).rstrip("-.")
    if not keep:
        return name[:MAX_STUDENT_ID].rstrip("-.") or "unnamed"
    name = name[: MAX_STUDENT_ID - len(keep) - 1].rstrip("-.")
    return f"{name}-{keep}" if name else keep


def distinct_ids(named: dict[str, str]) -> dict[str, str]:
    """{LMS id: student id} for {LMS id (digits): name}, two LMS ids never one student, by construction.

    A name held by one LMS id alone keeps its plain form (`Zoe`); every other gets `-<its LMS id>` appended
    (`Zoe-12`). That is not enough on its own: the plain form of `Zoe 12` is also `Zoe-12`, so whenever a plain
    form equals another id's, both are given their LMS ids, until no two are equal. This ends, and ends distinct:
    two forms `<name>-<digits>` with different digits never coincide (the shorter digits would have to hold the
    `-` of the longer), and each round gives at least one more LMS id its digits."""
    plain = {lms_id: usable_student_id(name) for lms_id, name in named.items()}
    suffixed: set[str] = set()
    while True:
        ids = {
            lms_id: usable_student_id(named[lms_id], keep=lms_id) if lms_id in suffixed else student
            for lms_id, student in plain.items()
        }
        holders: dict[str, list[str]] = {}
        for lms_id, student in ids.items():
            holders.setdefault(student, []).append(lms_id)
        clashing = {lms_id for shared in holders.values() if len(shared) > 1 for lms_id in shared} - suffixed
        if not clashing:
            return ids
        suffixed |= clashing


def cut(name: str) -> str:
    """A file name as a note names it: at most MAX_NAME_IN_NOTE characters."""
    return name if len(name) <= MAX_NAME_IN_NOTE else name[: MAX_NAME_IN_NOTE - 1] + "…"


def short(name: str) -> str:
    """A file name as a note quotes it."""
    return repr(cut(name))


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


def duplicate_number(stem: str) -> int:
    """The number a browser or LMS appended to a name (`x (2)`, `x-2`: 2), 0 if none."""
    suffix = _DUPLICATE_SUFFIX.search(stem)
    return int(re.sub(r"\D", "", suffix.group()) or 0) if suffix else 0


def choose_latest(candidates: list[Upload], notebook: str, kind: str = "uploads") -> tuple[Upload, str]:
    """The upload that counts for `notebook` (the largest `order`), and a note when it is not simply
    `<notebook>.ipynb` handed in once. The note names at most LISTED_UPLOADS earlier uploads and counts the rest:
    20,000 uploads of one notebook make a short note, not a list of 20,000 names."""
    candidates = sorted(candidates, key=lambda u: u.order)
    latest = candidates[-1]
    notes = [] if latest.uploaded_as == f"{notebook}.ipynb" else [f"submitted as {short(latest.uploaded_as)}"]
    earlier = candidates[:-1]
    if len(earlier) > LISTED_UPLOADS:
        notes.append(f"{len(candidates):,} {kind}; the latest kept ({len(earlier):,} earlier ones not graded)")
    elif earlier:
        listed = ", ".join(cut(u.original) for u in earlier)
        notes.append(f"latest of {len(candidates)} {kind} ({listed} not graded)")
    return latest, "; ".join(notes)
