"""Imported at start-up by every Python process of the book build, lesson kernels included
(tools/build_book.py puts this folder first on PYTHONPATH for the build only).

Each lesson's first `glue()` imports nbformat, which imports jsonschema, which imports the optional
format checker `rfc3987_syntax` at import time; that package compiles a grammar with lark when it is
imported: 1.1 s per process on this machine, a dozen processes per cold build. No lesson validates
IRIs, so the build tells Python the package is absent (jsonschema skips that optional check, as it does
when the package is not installed)."""

import sys

sys.modules.setdefault("rfc3987_syntax", None)
