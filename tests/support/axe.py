"""axe-core, the accessibility engine, run inside pages opened by Playwright (WCAG 2.1 A and AA rules).

The engine comes from the npm registry, pinned and checked against the registry's integrity value (the
same download and check as MathJax's, tools/vendor_mathjax.py), into ``_vendor/axe-core/`` (git-ignored),
once per machine. It is injected into the page as an inline script, so the tests' rule that a page makes
no request to another host still holds while it runs.

``violations(page)`` runs every rule tagged WCAG 2.0/2.1 A or AA on the page as it is now and returns one
line per violation and element; ``in_both_modes(page)`` runs them in the light and then the dark colour
mode of the book's theme (pydata-sphinx-theme switches on ``<html data-theme>``, as its mode button does).
"""

from __future__ import annotations

import functools
import importlib.util
import io
import re
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VERSION = "4.14.1"
URL = f"https://registry.npmjs.org/axe-core/-/axe-core-{VERSION}.tgz"
# The "integrity" field of the npm registry's metadata for axe-core@4.14.1.
INTEGRITY = "sha512-FHfa+lmNjQZfJz1q8wKqIDwC6DExcHt/pkjNQb09a3NPjCKg2rhu5qb2S4r76ASyFNNtuFooJpZe37OgudVGtQ=="
DEST = ROOT / "_vendor" / "axe-core" / VERSION / "axe.min.js"
WCAG_21_AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
RUN = """tags => axe.run(document, {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']})
  .then(r => r.violations.flatMap(v => v.nodes.map(n =>
    `${v.id} (${v.impact}): ${n.target.join(' ')}: ${n.failureSummary.replace(/\\s+/g, ' ').slice(0, 300)}`)))"""


def _vendor_tools():
    spec = importlib.util.spec_from_file_location("vendor_mathjax", ROOT / "tools" / "vendor_mathjax.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.cache
def source() -> str:
    """axe.min.js, downloaded and checked the first time."""
    if not DEST.is_file():
        tools = _vendor_tools()
        data = tools.download(URL, what=f"axe-core {VERSION}")
        tools.check_integrity(data, INTEGRITY, URL)
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            member = tar.extractfile("package/axe.min.js")
            assert member is not None
            script = member.read()
        DEST.parent.mkdir(parents=True, exist_ok=True)
        partial = DEST.with_suffix(".partial")
        partial.write_bytes(script)
        partial.replace(DEST)
    return DEST.read_text(encoding="utf8")


def violations(page) -> list[str]:
    """Every WCAG 2.1 A/AA violation on the page as it is shown now."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.add_script_tag(content=source())
    return page.evaluate(RUN, WCAG_21_AA)


def in_scheme(page, scheme: str) -> list[str]:
    """Violations of a page that follows the reader's ``prefers-color-scheme`` (the grader's feedback pages and
    class report, opened with Playwright's ``color_scheme``), after checking that it really shows that scheme (so
    that a dark run cannot pass by showing the light page)."""
    background = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
    dark = sum(int(v) for v in re.findall(r"\d+", background)[:3]) < 3 * 64
    assert dark == (scheme == "dark"), f"the page is not in its {scheme} scheme: body background {background}"
    return violations(page)


def set_mode(page, mode: str) -> None:
    """Show the book in the theme's light or dark mode, as its colour-mode button does."""
    page.evaluate(
        "mode => { document.documentElement.dataset.theme = mode; document.documentElement.dataset.mode = mode; }", mode
    )
    # The theme fades colours between modes (CSS transitions): axe must see the end of the fade, not a colour halfway
    # (on a busy machine it measured the search button's text at 2.07:1 and 3.5:1 mid-fade). Two frames let the new
    # styles apply and the transitions start; then every transition's end is awaited.
    page.evaluate(
        """() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))
          .then(() => Promise.all(
            document.getAnimations().filter(a => a instanceof CSSTransition).map(a => a.finished.catch(() => null))))
          .then(() => true)"""
    )


def in_both_modes(page) -> list[str]:
    """Violations in the light mode, then in the dark mode (each line names its mode)."""
    found = []
    for mode in ("light", "dark"):
        set_mode(page, mode)
        found += [f"{mode} mode: {line}" for line in violations(page)]
    return found
