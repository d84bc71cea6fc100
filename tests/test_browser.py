"""The built pages work in a real browser, offline: no request leaves 127.0.0.1, no console
error, and MathJax renders every formula (no raw TeX left on the page).

Uses the Debian Chromium at /usr/bin/chromium through Playwright (never `playwright install`).
Run: PATH=.venv/bin:$PATH .venv/bin/python -m pytest tests/test_browser.py -q
"""

from __future__ import annotations

import functools
import http.server
import os
import threading
from pathlib import Path
from urllib.parse import urlparse

import pytest

from book_build import BookBuild, build_book
from chromium import browser  # noqa: F401 - the fixture

SCREENSHOT = Path(os.environ.get("BOOK_SCREENSHOT", "/tmp/book-chapter02.png"))
PAGES = {
    "intro": "intro.html",
    "setup": "chapters/00_setup.html",
    "lesson": "chapters/02_attention_by_hand.html",
    "exercise": "chapters/02_dot_product_attention.html",
}
# TeX that MathJax replaces when it works; any of it in the visible text means raw math.
RAW_TEX = ["\\frac", "\\sqrt", "\\mathrm", "\\left", "$$", "\\(", "\\["]




@pytest.fixture(scope="module")
def book() -> BookBuild:
    build = build_book()
    assert build.returncode == 0, f"jupyter-book build failed (exit {build.returncode}):\n{build.log[-6000:]}"
    return build


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - keep pytest output clean
        pass


@pytest.fixture(scope="module")
def site(book):
    """Serve the built HTML on 127.0.0.1 on a free port; yield the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(book.html_dir))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)




class PageVisit:
    """A page opened with every off-host request aborted and every console error recorded."""

    def __init__(self, browser, base_url: str, path: str) -> None:
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.page = self.context.new_page()
        self.blocked: list[str] = []
        self.errors: list[str] = []
        self.failed: list[str] = []
        self.page.route("**/*", self._route)
        self.page.on("console", lambda msg: self.errors.append(f"console.{msg.type}: {msg.text}") if msg.type == "error" else None)
        self.page.on("pageerror", lambda exc: self.errors.append(f"pageerror: {exc}"))
        self.page.on("requestfailed", lambda req: self.failed.append(f"{req.url} ({req.failure})"))
        self.page.on("response", lambda resp: self.failed.append(f"{resp.url} (HTTP {resp.status})") if resp.status >= 400 else None)
        self.page.goto(base_url + path, wait_until="load")

    def _route(self, route):
        url = route.request.url
        if urlparse(url).hostname == "127.0.0.1" or url.startswith(("data:", "blob:")):
            route.continue_()
        else:
            self.blocked.append(url)
            route.abort()

    def wait_for_mathjax(self, timeout_ms: int = 30_000) -> bool:
        """Wait until MathJax has typeset the page; False if the page has no math (Sphinx then omits MathJax)."""
        if not self.page.evaluate("() => !!document.querySelector('script[src*=\"mathjax\"]')"):
            self.page.wait_for_load_state("networkidle")
            return False
        self.page.wait_for_function(
            "() => window.MathJax && MathJax.startup && MathJax.startup.promise"
            " && MathJax.startup.document && MathJax.startup.document.getMathItemsWithin",
            timeout=timeout_ms,
        )
        self.page.evaluate("() => MathJax.startup.promise")
        self.page.wait_for_load_state("networkidle")
        return True

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def visit(browser, site):
    visits: list[PageVisit] = []

    def open_page(path: str) -> PageVisit:
        visits.append(PageVisit(browser, site, path))
        return visits[-1]

    yield open_page
    for v in visits:
        v.close()


@pytest.mark.parametrize("name", list(PAGES))
def test_page_is_clean_offline(visit, name):
    v = visit(PAGES[name])
    v.wait_for_mathjax()
    v.page.wait_for_timeout(300)  # late console messages (theme scripts run on DOMContentLoaded/load)
    assert not v.blocked, f"{name}: requests to other hosts: {v.blocked}"
    assert not v.errors, f"{name}: console errors:\n" + "\n".join(v.errors)
    assert not v.failed, f"{name}: failed requests: {v.failed}"


@pytest.mark.parametrize("name", ["intro", "lesson", "exercise"])
def test_math_is_rendered(visit, name):
    v = visit(PAGES[name])
    assert v.wait_for_mathjax(), f"{name}: MathJax is not loaded"
    rendered = v.page.locator("mjx-container").count()
    assert rendered > 0, f"{name}: no formula was typeset by MathJax"
    # MathJax keeps no TeX in the page text once it has typeset it; code cells may contain
    # backslashes legitimately (e.g. matplotlib labels), so look at the prose only.
    prose = v.page.evaluate(
        """() => Array.from(document.querySelectorAll('article p, article li, article td, article th, article .math'))
                 .filter(e => !e.closest('.cell, pre, code'))
                 .map(e => e.innerText).join('\\n')"""
    )
    raw = [tex for tex in RAW_TEX if tex in prose]
    assert not raw, f"{name}: raw TeX left on the page: {raw}"
    errors = v.page.locator("mjx-merror").count()
    assert errors == 0, f"{name}: {errors} formulas failed to typeset (mjx-merror)"


def test_lesson_renders_numbers_and_heatmap(visit):
    v = visit(PAGES["lesson"])
    v.wait_for_mathjax()
    text = v.page.locator("article").inner_text()
    for number in ["13.30", "12.69", "0.670", "0.6698", "6.6976"]:
        assert number in text, f"{number} not visible on the lesson page"
    images = v.page.locator("article img")
    assert images.count() >= 3
    for i in range(images.count()):
        width = images.nth(i).evaluate("img => img.complete ? img.naturalWidth : 0")
        assert width > 100, f"image {i} on the lesson page did not load"
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    v.page.screenshot(path=str(SCREENSHOT), full_page=True)


def test_exercise_has_colab_launch_link(visit):
    v = visit(PAGES["exercise"])
    colab = v.page.locator("a[href^='https://colab.research.google.com/github/']")
    assert colab.count() >= 1, "no Open in Colab link on the exercise page"
    assert colab.first.get_attribute("href").endswith("chapters/02_dot_product_attention.ipynb")
