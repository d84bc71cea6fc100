"""The course's own code: reference versions of the exercises' pieces.

`course.provided` holds what later exercise notebooks receive as provided, locked cells
(see `coursetools/release.py`); lessons may import it too.
"""
