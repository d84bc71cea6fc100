"""Autograder for the attention course, built on nbgrader.

The pipeline is a chain of small stages, each a plain function in its own module:

    release  -> student notebooks in chapters/ from the nbgrader sources in solutions/
    collect  -> one Submission per (student, notebook) found in a submissions folder
    execute  -> one Submission in, one Result out (the only stage that runs student code)
    grade    -> runs `execute` over many submissions in worker processes; one writer
                stores results in the work dir and the nbgrader gradebook
    feedback -> per-student HTML without hidden test source
    export   -> CSV gradebook
    report   -> the class report per notebook (failures, late work, `similarity`, `--verify`)

`cli` is a thin argparse layer over these functions.
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
