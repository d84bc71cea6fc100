"""Autograder for the attention course, built on nbgrader.

The pipeline is a chain of small stages, each a plain function in its own module:

    prepare  -> intake/: lays out what was handed in (a plain folder, a zip, a Canvas or Moodle export,
                an nbgrader course) and records which file counts for each (student, notebook) and why
    collect  -> one Submission per (student, notebook) from that record (sizes, hashes, notebook problems)
    execute  -> one Submission in, one Result out: the only stage that runs student code, in the
                sandbox (sandbox/, runner/); a hidden test's judge decides it in a clean interpreter (judge/)
    grade    -> runs `execute` over many submissions (threads each waiting on a sandboxed process, warm
                fork servers as root, or a Dask cluster: grading/pools.py); one writer stores results in the
                work dir and the nbgrader gradebook (store/); `--dry-run` lays the input out and runs nothing,
                `--verify` grades a sample again
    feedback -> per-student HTML without hidden test source
    export   -> the gradebook as CSV (plain, Canvas, Moodle), manual overrides included
    report   -> the class report per notebook (failures, late work, `similarity`, `--verify`)
    gradescope -> the same grader packaged for Gradescope's autograder (integrations/)

`release` and `publish` (the student notebooks and the public course) live in `coursetools`, which the CLI
calls; `cli` is a thin argparse layer over these functions.
"""

import sys

__version__ = "0.1.0"

# Optional imports that cost more than what they offer here. nbformat imports jsonschema, which imports the optional
# IRI format checker `rfc3987_syntax`; that package compiles a grammar with lark when imported: 0.9 s of the start of
# every grading run, and of every process of the book build (tools/book_site/sitecustomize.py applies the same). No
# notebook here validates IRIs, so Python is told the package is absent (jsonschema then skips that optional check,
# as it does when the package is not installed).
SLOW_OPTIONAL_IMPORTS = ("rfc3987_syntax",)


def skip_slow_optional_imports() -> None:
    for name in SLOW_OPTIONAL_IMPORTS:
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]


skip_slow_optional_imports()
