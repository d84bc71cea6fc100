"""The book's pages as the public release holds them: the table of contents pruned to what is published,
private blocks dropped, links to pages not open yet turned into titles, the chapter table's dates."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

import nbformat
import yaml

from coursetools.manifest import Chapter, Manifest, Moment
from coursetools.site import PublishError

PRIVATE_BEGIN = "% BEGIN PRIVATE"
PRIVATE_END = "% END PRIVATE"
PUBLIC_LINE = "% PUBLIC:"


def toc_files(toc: dict) -> list[str]:
    """Every docname the table of contents lists, root first, in reading order."""
    found = [toc["root"]]

    def walk(entries: list) -> None:
        for entry in entries or []:
            if "file" in entry:
                found.append(entry["file"])
            walk(entry.get("sections"))
            walk(entry.get("chapters"))
            for part in entry.get("parts") or []:
                walk(part.get("chapters"))

    walk(toc.get("chapters") or [])
    for part in toc.get("parts") or []:
        walk(part.get("chapters"))
        walk(part.get("sections"))
    return found


def public_toc(toc: dict, private: frozenset[str], published: frozenset[str] | None = None) -> dict:
    """The table of contents without the private pages and, when `published` is given, without the
    pages not in it (and without a part left empty)."""

    def prune(entries: list | None) -> list:
        kept = []
        for entry in entries or []:
            if entry.get("file") in private or (
                published is not None and "file" in entry and entry["file"] not in published
            ):
                continue
            entry = dict(entry)
            for key in ("sections", "chapters"):
                if key in entry:
                    entry[key] = prune(entry[key])
                    if not entry[key]:
                        del entry[key]
            kept.append(entry)
        return kept

    toc = dict(toc)
    if toc.get("root") in private:
        raise PublishError(f"the book's root page {toc['root']!r} is private: the public release needs a first page")
    if "chapters" in toc:
        toc["chapters"] = prune(toc["chapters"])
    if "parts" in toc:
        parts = []
        for part in toc["parts"]:
            part = dict(part)
            part["chapters"] = prune(part.get("chapters"))
            if part["chapters"]:
                parts.append(part)
        toc["parts"] = parts
    return toc


def page_source(root: Path, docname: str) -> Path:
    """The source file of a docname (the toc gives it without a suffix)."""
    candidates = [root / f"{docname}{suffix}" for suffix in (".md", ".ipynb")]
    if Path(docname).suffix in (".md", ".ipynb"):
        candidates.insert(0, root / docname)
    found = [c for c in candidates if c.is_file()]
    if not found:
        raise PublishError(f"_toc.yml lists {docname!r} but there is no {docname}.md or {docname}.ipynb")
    return found[0]


def public_markdown(text: str) -> str:
    """A Markdown page with its private blocks dropped and its `% PUBLIC:` lines made visible."""
    out, inside = [], False
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if stripped.startswith(PRIVATE_BEGIN):
            if inside:
                raise PublishError(f"nested {PRIVATE_BEGIN!r}")
            inside = True
        elif stripped.startswith(PRIVATE_END):
            if not inside:
                raise PublishError(f"{PRIVATE_END!r} without {PRIVATE_BEGIN!r}")
            inside = False
        elif inside:
            continue
        elif stripped.startswith(PUBLIC_LINE):
            out.append(line.split(PUBLIC_LINE, 1)[1].lstrip(" "))
        else:
            out.append(line)
    if inside:
        raise PublishError(f"{PRIVATE_BEGIN!r} without {PRIVATE_END!r}")
    return "".join(out)


def is_text_notebook(text: str) -> bool:
    """A MyST Markdown notebook (executed by the book) rather than a plain Markdown page."""
    match = re.match(r"^---\n(.*?)\n---\n", text, re.DOTALL)
    if not match:
        return False
    front = yaml.safe_load(match.group(1)) or {}
    return "kernelspec" in front or "jupytext" in front


def page_title(path: Path) -> str:
    """The first level-1 heading of a page (Markdown or notebook)."""
    if path.suffix == ".ipynb":
        text = "\n".join(c.source for c in nbformat.read(str(path), as_version=4).cells if c.cell_type == "markdown")
    else:  # without its code cells, whose comments also start with "# "
        text = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.MULTILINE | re.DOTALL)
    match = re.search(r"^# +(.+?)\s*$", text, re.MULTILINE)
    return match.group(1) if match else path.stem


def when(time: datetime | None) -> str:
    return time.strftime("%a %d %b %Y, %H:%M") if time else "?"


_DOC_TARGET = re.compile(r"\{doc\}`([^`]+)`")


def unpublished_references(text: str, folder: str, published: set[str], titles: dict[str, str]) -> str:
    """{doc} links to pages not published yet become their titles in italics (a link would break the build)."""

    def replace(match: re.Match) -> str:
        target = match.group(1)
        explicit = re.match(r"(.*?)\s*<([^>]+)>$", target)
        page = explicit.group(2) if explicit else target
        docname = page.lstrip("/") if page.startswith("/") or not folder else f"{folder}/{page}"
        if docname in published:
            return match.group(0)
        return f"*{explicit.group(1) if explicit else titles.get(docname, page)}*"

    return _DOC_TARGET.sub(replace, text)


def chapter_statuses(text: str, manifest: Manifest, moment: Moment, published: list[str], held: dict[str, str]) -> str:
    """The last column of the chapter table of a page (rows `| NN | ... |`): open, due, or when it opens."""
    if not manifest.has_calendar and moment.time is None and moment.opened == moment.past_due:
        return text

    def status(chapter: Chapter) -> str:
        if chapter.number in published:
            if chapter.exercise and chapter.number not in moment.past_due:
                return f"open: exercise due {when(chapter.due)}" if chapter.due else "open"
            return "open"
        if chapter.number in held:
            return "opens when the earlier exercises it builds on are due"
        return f"opens {when(chapter.opens)}" if chapter.opens else "not open yet"

    numbers = {c.number: c for c in manifest.chapters}
    lines = []
    for line in text.splitlines(keepends=True):
        match = re.match(r"^\| *(\d\d) *\|(.*)\|[^|]*\|\s*$", line)
        if match and match.group(1) in numbers:
            line = f"| {match.group(1)} |{match.group(2)}| {status(numbers[match.group(1)])} |\n"
        lines.append(line)
    return "".join(lines)
