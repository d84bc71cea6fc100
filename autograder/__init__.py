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

__version__ = "0.1.0"
