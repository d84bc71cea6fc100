"""Imported at start-up by every Python process of the book build, lesson kernels included
(tools/build_book.py puts this folder first on PYTHONPATH for the build only).

Each lesson's first `glue()` imports nbformat, which imports jsonschema, which imports an optional package that
costs about a second per process to import (autograder.SLOW_OPTIONAL_IMPORTS says which and why); importing the
autograder package, which imports nothing else, tells Python that package is absent."""

try:
    import autograder  # noqa: F401 - its import applies autograder.skip_slow_optional_imports
except ImportError:  # a checkout without the grader installed: the build is just slower
    pass
