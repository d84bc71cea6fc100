"""Every page of the book in a real browser, offline, at desktop and phone width.

Each page that `_toc.yml` lists (and the intro) is opened at 1280 px and at 390 px wide, with every
request to a host other than the local server aborted, and must have: no console error, no failed
or blocked request, no raw TeX (every formula typeset by MathJax), every image loaded, every
internal link resolving (to a file of the site, and to an element of that page when it names one),
a Colab button exactly where the public release holds the notebook it opens, and at phone width
nothing wider than the screen outside a scrolling box, and every image alt text and every figure legible
(`figure_problems`: at least print size, one point of the figure per CSS px). A full-page screenshot of each visit is
written to `_build/screenshots/<width>/<page>.png` (BOOK_SCREENSHOTS overrides the folder). The
site's search works offline: a chapter-02 word typed into the search box finds chapter 02.

Accessibility: axe-core (tests/support/axe.py) runs every WCAG 2.1 A and AA rule on every page, in the theme's light and
dark modes, at both widths, and must find nothing; a keyboard alone reaches and opens every dropdown of a lesson
(the answers of *Check your understanding*) and the sidebar's chapter expanders.

Uses the Debian Chromium at /usr/bin/chromium through Playwright (never `playwright install`).
Run: PATH=.venv/bin:$PATH .venv/bin/python -m pytest tests/test_browser.py -q
"""

from __future__ import annotations

import os
import re
import struct
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
import yaml

import axe
from book_build import ROOT, BookBuild
from chromium import PAGE_TIMEOUT_MS, new_context, served
from coursetools.pages import toc_files
from coursetools.site import read_settings
from publish_tree import published

pytestmark = [pytest.mark.book, pytest.mark.browser, pytest.mark.slow]

SCREENSHOTS = Path(os.environ.get("BOOK_SCREENSHOTS", ROOT / "_build" / "screenshots"))
WIDTHS = {"desktop": 1280, "phone": 390}
DOCNAMES = toc_files(yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8")))
SETTINGS = read_settings()
ORG, REPO = SETTINGS.github
COLAB_PREFIX = f"https://colab.research.google.com/github/{ORG}/{REPO}/blob/{SETTINGS.branch}/"
# TeX that MathJax replaces when it works; any of it in the visible prose means raw math.
RAW_TEX = ["\\frac", "\\sqrt", "\\mathrm", "\\left", "$$", "\\(", "\\["]
# A word of chapter 02's lesson only (tests that the search finds the right chapter).
SEARCH_TERM = "saturation"
SEARCH_PAGE = "chapters/02_attention_by_hand.html"


@pytest.fixture(scope="module")
def site(book):
    """Serve the built HTML on 127.0.0.1 on a free port; yield the base URL."""
    with served(book.html_dir) as base_url:
        yield base_url


class PageVisit:
    """A page opened with every off-host request aborted and every console error recorded."""

    def __init__(self, browser, base_url: str, path: str, width: int = 1280) -> None:
        self.context = new_context(browser, width, 900 if width > 600 else 844)
        self.page = self.context.new_page()
        self.blocked: list[str] = []
        self.errors: list[str] = []
        self.failed: list[str] = []
        self.page.route("**/*", self._route)
        self.page.on(
            "console",
            lambda msg: self.errors.append(f"console.{msg.type}: {msg.text}") if msg.type == "error" else None,
        )
        self.page.on("pageerror", lambda exc: self.errors.append(f"pageerror: {exc}"))
        self.page.on("requestfailed", lambda req: self.failed.append(f"{req.url} ({req.failure})"))
        self.page.on(
            "response",
            lambda resp: self.failed.append(f"{resp.url} (HTTP {resp.status})") if resp.status >= 400 else None,
        )
        self.page.goto(base_url + path, wait_until="load")

    def _route(self, route):
        url = route.request.url
        if urlparse(url).hostname == "127.0.0.1" or url.startswith(("data:", "blob:")):
            route.continue_()
        else:
            self.blocked.append(url)
            route.abort()

    def wait_for_mathjax(self, timeout_ms: int = PAGE_TIMEOUT_MS) -> bool:
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

    def open_page(path: str, width: int = 1280) -> PageVisit:
        visits.append(PageVisit(browser, site, path, width))
        return visits[-1]

    yield open_page
    for v in visits:
        v.close()


# --- what is checked on every page ------------------------------------------------------------

_ids: dict[Path, set[str]] = {}


def _ids_of(path: Path) -> set[str]:
    if path not in _ids:
        text = path.read_text(encoding="utf8", errors="replace")
        _ids[path] = set(re.findall(r"""\b(?:id|name)=["']([^"']+)["']""", text))
    return _ids[path]


def broken_internal_links(html_dir: Path, hrefs: list[str]) -> list[str]:
    """Links to the local server that lead to no file, or to no element of the page they name."""
    broken = []
    for href in sorted(set(hrefs)):
        url = urlparse(href)
        if url.scheme not in ("http", "https") or url.hostname != "127.0.0.1":
            continue
        relative = unquote(url.path).lstrip("/")
        target = html_dir / relative
        if relative == "" or relative.endswith("/"):
            target = target / "index.html"
        if not target.is_file():
            broken.append(f"{href}: no such file in the site")
        elif url.fragment and target.suffix == ".html" and unquote(url.fragment) not in _ids_of(target):
            broken.append(f"{href}: no element #{url.fragment} on {relative}")
    return broken


def expected_colab_path(book: BookBuild, docname: str) -> str | None:
    """The repository path a page's Colab button must open, or None for no button."""
    if docname in SETTINGS.private_pages:
        return None
    if (ROOT / f"{docname}.ipynb").is_file():  # an exercise: the student notebook itself
        return f"{docname}.ipynb"
    if (book.html_dir / "_sources" / f"{docname}.ipynb").is_file():  # a MyST notebook page: its lesson notebook
        return f"{SETTINGS.lesson_dir}/{docname.rsplit('/', 1)[-1]}.ipynb"
    return None


PAGE_FACTS = """() => {
  const visible = e => !!(e.offsetWidth || e.offsetHeight || e.getClientRects().length);
  const prose = Array.from(document.querySelectorAll('article p, article li, article td, article th, article .math'))
    .filter(e => !e.closest('.cell, pre, code')).map(e => e.innerText).join('\\n');
  const images = Array.from(document.images).map(img => ({src: img.currentSrc || img.src,
    ok: img.complete && img.naturalWidth > 0}));
  const math = Array.from(document.querySelectorAll('article .math'));
  return {
    prose,
    images,
    hrefs: Array.from(document.querySelectorAll('a[href]'), a => a.href),
    colab: Array.from(document.querySelectorAll('a[href^="https://colab.research.google.com"]'), a => a.href),
    math: math.length,
    untypeset: math.filter(e => !e.querySelector('mjx-container')).map(e => e.textContent.slice(0, 60)),
    merror: document.querySelectorAll('mjx-merror').length,
  };
}"""

# Elements of the article wider than the screen that are not inside a box that scrolls sideways
# (the page itself would then scroll sideways, or clip them).
OVERFLOW = """() => {
  const vw = document.documentElement.clientWidth;
  const out = [];
  const name = e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') +
    (typeof e.className === 'string' && e.className ? '.' + e.className.trim().split(/\\s+/).join('.') : '');
  for (const el of document.querySelectorAll('article *')) {
    // MathJax's copy of each formula for screen readers is clipped to nothing on screen.
    if (el.closest('mjx-assistive-mml')) continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.right <= vw + 1) continue;
    let a = el.parentElement, ok = false;
    while (a) {
      const s = getComputedStyle(a);
      if (s.overflowX === 'auto' || s.overflowX === 'scroll') { ok = a.getBoundingClientRect().right <= vw + 1; break; }
      if (a.tagName === 'ARTICLE') break;
      a = a.parentElement;
    }
    if (!ok) out.push(`${name(el)} (right edge at ${Math.round(r.right)} px)`);
  }
  return {pageScrollWidth: document.documentElement.scrollWidth, viewport: vw, elements: out.slice(0, 8),
          count: out.length};
}"""


# Every image of the page; for those of the article (the lessons' figures), their size in the file and on screen.
IMAGES = """() => Array.from(document.images).map(img => ({
  src: img.currentSrc || img.src, alt: img.getAttribute('alt'), figure: !!img.closest('article'),
  natural: img.naturalWidth, shown: img.getBoundingClientRect().width}))"""


def png_dpi(path: Path) -> float | None:
    """The resolution a PNG declares in its pHYs chunk (matplotlib writes the figure's dpi there), or None."""
    data = path.read_bytes()
    at = 8
    while at + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[at : at + 8])
        if kind == b"pHYs":
            per_metre, _, unit = struct.unpack(">IIB", data[at + 8 : at + 17])
            return per_metre * 0.0254 if unit == 1 else None
        if kind == b"IDAT":
            return None
        at += 12 + length
    return None


def figure_problems(html_dir: Path, images: list[dict]) -> list[str]:
    """Images without alt text, and figures shrunk below print size on a 390 px phone.

    Alt text: every image needs one that says what it shows. An empty alt, or the file name that myst-nb writes
    when a cell's figure has none (`mystnb: image: alt:` in the cell's metadata, or `{glue:figure}`'s `:alt:`,
    give it one), fails.

    Legibility: a figure drawn at `dpi` pixels per inch holds text of `p` points in `p * dpi / 72` of its pixels;
    shown `shown` CSS px wide instead of its `natural` width, that text is `p * dpi / 72 * shown / natural` CSS px
    tall. The rule: at least one CSS px per point, that is at least print size in CSS units (1 pt = 4/3 px), so
    the lessons' 10-pt labels stay at least 10 px and their smallest text, 9 pt (tests/test_book.py keeps every
    font of a lesson's figures at 9 pt or more), at least 9 px, about the smallest text a phone can be read at
    without zooming. At 390 px the article is 358 px wide, so a 110-dpi figure may be at most 358 * 110 / 72 =
    547 px wide: about 4.9 inches (figsize 4.8 wide or less, panels stacked rather than side by side). A figure
    without a declared resolution is taken at the CSS reference of 96 dpi.
    """
    problems = []
    for image in images:
        name = unquote(urlparse(image["src"]).path).rsplit("/", 1)[-1]
        alt = (image["alt"] or "").strip()
        if not alt:
            problems.append(f"image without alt text: {name}")
        elif alt.rsplit("/", 1)[-1] == name or alt.lower().endswith((".png", ".svg", ".jpg", ".jpeg", ".gif")):
            problems.append(f"image whose alt text is its file name: {name}")
        if not image["figure"] or not image["natural"]:
            continue
        path = html_dir / unquote(urlparse(image["src"]).path).lstrip("/")
        dpi = (png_dpi(path) if path.suffix == ".png" and path.is_file() else None) or 96.0
        px_per_pt = dpi / 72 * image["shown"] / image["natural"]
        if px_per_pt < 0.995:
            problems.append(
                f"figure {name} ({image['natural']} px wide at {dpi:.0f} dpi) is shown {image['shown']:.0f} px wide: "
                f"{px_per_pt:.2f} CSS px per point, its 10-pt text {10 * px_per_pt:.1f} px; at most "
                f"{image['shown'] * 72 / dpi:.0f} px ({image['shown'] / 72:.1f} in) wide keeps 1 px per point"
            )
    return problems


def screenshot_path(docname: str, width: str) -> Path:
    return SCREENSHOTS / width / f"{docname.replace('/', '__')}.png"


@pytest.mark.parametrize("width", list(WIDTHS))
@pytest.mark.parametrize("docname", DOCNAMES)
def test_page_in_browser(book, visit, docname, width):
    public, _ = published()
    v = visit(f"{docname}.html", WIDTHS[width])
    v.wait_for_mathjax()
    v.page.wait_for_timeout(300)  # late console messages (theme scripts run on DOMContentLoaded/load)
    facts = v.page.evaluate(PAGE_FACTS)
    problems = []
    problems += [f"request to another host: {url}" for url in v.blocked]
    problems += [f"console error: {e}" for e in v.errors]
    problems += [f"failed request: {f}" for f in v.failed]

    raw = [tex for tex in RAW_TEX if tex in facts["prose"]]
    problems += [f"raw TeX in the prose: {raw}"] if raw else []
    problems += [f"formula not typeset: {t!r}" for t in facts["untypeset"]]
    problems += [f"{facts['merror']} formulas failed to typeset (mjx-merror)"] if facts["merror"] else []
    problems += [f"image not loaded: {img['src']}" for img in facts["images"] if not img["ok"]]
    problems += [f"broken link {b}" for b in broken_internal_links(book.html_dir, facts["hrefs"])]

    expected = expected_colab_path(book, docname)
    if expected is None:
        problems += [f"a Colab link where none should be: {url}" for url in facts["colab"]]
    elif [url for url in facts["colab"]] != [COLAB_PREFIX + SETTINGS.repo_path(expected)]:
        problems.append(f"Colab links {facts['colab']}, expected exactly one to {COLAB_PREFIX + expected}")
    for url in facts["colab"]:
        path = url.removeprefix(COLAB_PREFIX)
        if not url.startswith(COLAB_PREFIX) or not path.endswith(".ipynb") or not (public / path).is_file():
            problems.append(f"the Colab link {url} opens no notebook of the public release")

    if WIDTHS[width] < 600:
        overflow = v.page.evaluate(OVERFLOW)
        if overflow["pageScrollWidth"] > overflow["viewport"] + 1:
            problems.append(
                f"the page scrolls sideways: {overflow['pageScrollWidth']} px wide on a {overflow['viewport']} px "
                "screen"
            )
        if overflow["count"]:
            problems.append(
                f"{overflow['count']} elements wider than the screen outside a scrolling box: {overflow['elements']}"
            )
        if docname.startswith("chapters/"):  # the lessons' figures (the grading guide's come from the grader)
            problems += figure_problems(book.html_dir, v.page.evaluate(IMAGES))

    shot = screenshot_path(docname, width)
    shot.parent.mkdir(parents=True, exist_ok=True)
    v.page.screenshot(path=str(shot), full_page=True)
    problems += [f"WCAG 2.1 AA: {line}" for line in axe.in_both_modes(v.page)]
    assert not problems, f"{docname} at {WIDTHS[width]} px:\n" + "\n".join(problems)


def test_every_page_is_visited(book):
    """The parametrisation covers every page the build wrote (besides Sphinx's own genindex and search)."""
    built = {
        p.relative_to(book.html_dir).with_suffix("").as_posix()
        for p in book.html_dir.rglob("*.html")
        if "_static" not in p.parts
    }
    assert built - {"genindex", "search", "index"} == set(DOCNAMES)


def test_search_works_offline(visit):
    v = visit("intro.html")
    v.page.locator("button.search-button, .search-button-field").first.click()
    box = v.page.locator("input[name='q']:visible").first
    box.fill(SEARCH_TERM)
    box.press("Enter")
    v.page.wait_for_url("**/search.html?q=*")
    results = v.page.locator("#search-results ul.search li a")
    results.first.wait_for(timeout=PAGE_TIMEOUT_MS)
    hrefs = [results.nth(i).get_attribute("href") for i in range(results.count())]
    assert hrefs and hrefs[0].split("#")[0].endswith(SEARCH_PAGE), f"searching {SEARCH_TERM!r} found {hrefs}"
    assert not v.blocked and not v.errors, (v.blocked, v.errors)


def test_lesson_renders_numbers_and_heatmap(visit):
    v = visit("chapters/02_attention_by_hand.html")
    v.wait_for_mathjax()
    text = v.page.locator("article").inner_text()
    for number in ["13.30", "12.69", "0.670", "0.6698", "6.6976"]:
        assert number in text, f"{number} not visible on the lesson page"
    images = v.page.locator("article img")
    assert images.count() >= 3
    for i in range(images.count()):
        width = images.nth(i).evaluate("img => img.complete ? img.naturalWidth : 0")
        assert width > 100, f"image {i} on the lesson page did not load"


def test_exercise_has_colab_launch_link(visit):
    v = visit("chapters/02_dot_product_attention.html")
    colab = v.page.locator("a[href^='https://colab.research.google.com/github/']")
    assert colab.count() == 1, "no Open in Colab link on the exercise page"
    assert colab.first.get_attribute("href") == COLAB_PREFIX + "chapters/02_dot_product_attention.ipynb"


# Each focus the Tab key reaches: what it is (a sidebar expander, a dropdown, a link...) and how to find it again.
FOCUSED = """() => {
  const e = document.activeElement;
  if (!e || e === document.body) return null;
  const kind = e.matches('details.sd-dropdown > summary') ? 'dropdown'
    : e.matches('.bd-sidebar-primary summary, #pst-primary-sidebar summary') ? 'expander' : e.tagName.toLowerCase();
  return {kind, label: (e.getAttribute('aria-label') || e.innerText || '').trim().slice(0, 60),
          index: Array.from(document.querySelectorAll(e.tagName)).indexOf(e)};
}"""
KEYBOARD_PAGE = "chapters/02_attention_by_hand.html"


def test_keyboard_reaches_and_opens_every_dropdown(visit):
    """Tab alone reaches every dropdown of a lesson and every chapter expander of the sidebar; Enter opens them."""
    v = visit(KEYBOARD_PAGE)
    page = v.page
    dropdowns = page.locator("details.sd-dropdown > summary").count()
    expanders = page.locator("#pst-primary-sidebar summary, .bd-sidebar-primary summary").count()
    assert dropdowns >= 3 and expanders >= 3, (dropdowns, expanders)
    reached: list[dict] = []
    for _ in range(600):
        page.keyboard.press("Tab")
        focused = page.evaluate(FOCUSED)
        if focused is None:
            continue
        if reached and focused == reached[0]:
            break  # round the page once
        reached.append(focused)
    kinds = [f["kind"] for f in reached]
    assert kinds.count("dropdown") == dropdowns, f"Tab reached {kinds.count('dropdown')} of {dropdowns} dropdowns"
    assert kinds.count("expander") == expanders, f"Tab reached {kinds.count('expander')} of {expanders} expanders"
    assert all(f["label"] for f in reached if f["kind"] == "expander"), "a sidebar expander without a name"

    for selector in ("details.sd-dropdown", "#pst-primary-sidebar li:not(.current) > details"):
        details = page.locator(selector).first
        details.locator("> summary").focus()
        was_open = details.evaluate("d => d.open")
        page.keyboard.press("Enter")
        page.wait_for_function("([s, was]) => document.querySelector(s).open !== was", arg=[selector, was_open])
        page.keyboard.press("Space")
        page.wait_for_function("([s, was]) => document.querySelector(s).open === was", arg=[selector, was_open])
