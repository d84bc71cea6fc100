"""Debian Chromium driven by Playwright, shared by the browser tests (never `playwright install`).

The `browser` fixture (tests/conftest.py) launches it with these settings.
"""

from __future__ import annotations

import functools
import http.server
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
# As root Chromium needs --no-sandbox; the network flags stop its background requests,
# which this machine's closed network would refuse (and log) at every start.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
# How long a page may take to load, typeset or answer, in ms. Generous on purpose: a test waits for a condition
# (the load event, MathJax's promise, a search result), never for a fixed time, and on a 2-core machine running
# the rest of the suite beside it a page with a few hundred formulas took over 30 s (Playwright's default).
PAGE_TIMEOUT_MS = 240_000


def chromium_or_skip() -> Path:
    """The browser, or a skip with how to install it (a failure under CI, which installs it)."""
    if CHROMIUM.exists():
        return CHROMIUM
    message = f"{CHROMIUM} not found: install Debian chromium (apt-get install chromium)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def new_context(browser, width: int, height: int = 900, **options):
    """A browser context whose every wait (navigation, selector, function) may take PAGE_TIMEOUT_MS."""
    context = browser.new_context(viewport={"width": width, "height": height}, **options)
    context.set_default_timeout(PAGE_TIMEOUT_MS)
    context.set_default_navigation_timeout(PAGE_TIMEOUT_MS)
    return context


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - keep pytest output clean
        pass


@contextmanager
def served(directory: Path) -> Iterator[str]:
    """Serve a built site on 127.0.0.1 on a free port; yield its base URL."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
