#!/usr/bin/env python3
"""Vendor MathJax 3 into ``_vendor/mathjax/`` so the book renders math offline.

The book's ``_config.yml`` serves ``_vendor/`` as an extra Sphinx static path
(so the files land in ``_build/html/_static/mathjax/``) and points
``mathjax_path`` at ``mathjax/tex-chtml.js``. Without this, Sphinx loads
MathJax from a CDN and every page shows raw TeX when offline.

Why not ``_static/``: Jupyter Book 1 injects every ``.js`` file it finds in a
book's ``_static`` folder into every page, which would load all of MathJax's
components on every page.

The script downloads the npm tarball with the standard library only (no
Node.js), checks its sha512 integrity against the value pinned below, and
extracts from ``package/es5/`` only what the book's pages can load: the one
combined component they use (``tex-chtml.js``) and the folders it loads from on
demand (TeX extensions, fonts, the context menu and its accessibility and
renderer options). The other combined components (``tex-svg.js``,
``tex-mml-chtml.js``, the ``-full`` builds, ``node-main.js``, ...) are never
loaded by the pages and are left out: about 10 MB instead of 24 MB. It is
idempotent: if the vendored copy is already present it does nothing.

Usage: python tools/vendor_mathjax.py [--force] [--dest DIR]
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import shutil
import sys
import tarfile
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

VERSION = "3.2.2"
URL = f"https://registry.npmjs.org/mathjax/-/mathjax-{VERSION}.tgz"
# The "integrity" field of the npm registry's metadata for mathjax@3.2.2.
INTEGRITY = "sha512-Bt+SSVU8eBG27zChVewOicYs7Xsdt40qm4+UpHyX7k0/O9NliPc+x77k1/FEsPsjKPZGJvtRZM1vO+geW0OhGw=="
PREFIX = "package/es5/"
# The file the book loads; its presence (with the version stamp) means "already vendored".
ENTRY = "tex-chtml.js"
# What tex-chtml.js loads at run time, on demand: input/tex/extensions (autoloaded TeX
# packages), output/chtml fonts, output/svg (the menu's renderer switch), ui (the menu),
# a11y and sre (the menu's accessibility options).
LAZY_FOLDERS = ("input/", "output/", "ui/", "a11y/", "sre/")
STAMP = ".mathjax-version"
# Written into the stamp: a copy vendored with another selection of files is vendored again.
LAYOUT = "tex-chtml+lazy"

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DEST = ROOT / "_vendor" / "mathjax"


def stamp_text() -> str:
    return f"{VERSION} {LAYOUT}"


def is_vendored(dest: Path) -> bool:
    stamp = dest / STAMP
    return (dest / ENTRY).is_file() and stamp.is_file() and stamp.read_text().strip() == stamp_text()


def wanted(relative: str) -> bool:
    """Whether a path under es5/ is something the pages can load."""
    return relative == ENTRY or relative.startswith(LAZY_FOLDERS)


def download(url: str = URL, what: str = f"MathJax {VERSION}", timeout: float = 60.0) -> bytes:
    """An npm tarball's bytes, or exit with what to do (also used for the tests' axe-core, tests/support/axe.py)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.read()
    except (urllib.error.URLError, OSError) as exc:
        raise SystemExit(
            f"error: could not download {what} from {url}: {exc}\n"
            "Check the network connection (or a proxy setting) and run the command again."
        ) from exc


def check_integrity(data: bytes, integrity: str = INTEGRITY, url: str = URL) -> None:
    """Exit unless ``data`` has the npm registry's pinned ``integrity`` (``sha512-<base64>``)."""
    algorithm, _, expected = integrity.partition("-")
    actual = base64.b64encode(hashlib.new(algorithm, data).digest()).decode()
    if actual != expected:
        raise SystemExit(
            f"error: integrity check failed for {url}\n"
            f"  expected {integrity}\n  got      {algorithm}-{actual}\n"
            "The download is corrupt or not the pinned release; nothing was extracted."
        )


def extract_es5(data: bytes, dest: Path) -> int:
    """Extract what the pages load from ``package/es5/`` into ``dest``; return the number of files."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    # Extract into a temporary sibling, then move into place, so that an interrupted
    # run never leaves a half-vendored folder that looks complete.
    tmp = Path(tempfile.mkdtemp(prefix=".mathjax-", dir=dest.parent))
    count = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            for member in tar.getmembers():
                if not member.name.startswith(PREFIX) or not member.isfile():
                    continue
                if not wanted(member.name[len(PREFIX) :]):
                    continue
                relative = Path(member.name[len(PREFIX) :])
                if relative.is_absolute() or ".." in relative.parts:
                    raise SystemExit(f"error: unsafe path in tarball: {member.name}")
                target = tmp / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                source = tar.extractfile(member)
                assert source is not None
                with source, open(target, "wb") as out:
                    shutil.copyfileobj(source, out)
                count += 1
        if not (tmp / ENTRY).is_file():
            raise SystemExit(f"error: {ENTRY} not found under {PREFIX} in {URL}")
        (tmp / STAMP).write_text(stamp_text() + "\n")
        if dest.exists():
            shutil.rmtree(dest)
        tmp.rename(dest)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
    return count


def vendor(dest: Path = DEFAULT_DEST, force: bool = False) -> Path:
    if is_vendored(dest) and not force:
        print(f"MathJax {VERSION} already vendored in {dest}; nothing to do.")
        return dest
    print(f"Downloading MathJax {VERSION} from {URL} ...")
    data = download()
    check_integrity(data)
    count = extract_es5(data, dest)
    print(
        f"Vendored MathJax {VERSION}: {count} files from {PREFIX} ({ENTRY} and what it loads) into {dest} "
        "(integrity verified)."
    )
    return dest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dest", type=Path, default=DEFAULT_DEST, help=f"target folder (default: {DEFAULT_DEST})")
    parser.add_argument("--force", action="store_true", help="download again even if already vendored")
    args = parser.parse_args(argv)
    vendor(args.dest, force=args.force)
    return 0


if __name__ == "__main__":
    sys.exit(main())
