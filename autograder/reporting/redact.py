"""Hidden test source never reaches a student or a page: every line of it in a text is replaced.

One rule for the feedback pages, the class report and anything else that shows a message, an error or a
student's code next to the tests: the lines a student never sees (`model.notebooks.secret_lines`) are
replaced, longest first (a short line inside a longer one must not leave the rest of the longer visible).
"""

from __future__ import annotations

PLACEHOLDER = "[hidden test line]"


def redact(text: str, hidden: set[str], limit: int | None = None) -> str:
    """`text` with every hidden line replaced; cut to `limit` characters when given (a message, not code)."""
    for line in sorted(hidden, key=len, reverse=True):
        text = text.replace(line, PLACEHOLDER)
    if limit is not None and len(text) > limit:
        text = text[:limit] + " [...]"
    return text
