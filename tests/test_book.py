"""The book builds with no warnings, and its pages say and load what they should.

Run: PATH=.venv/bin:$PATH .venv/bin/python -m pytest tests/test_book.py -q
"""

from __future__ import annotations

import json
import math
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlparse

import pytest
import yaml

from book_build import ROOT, BookBuild
from coursetools.pages import toc_files
from coursetools.site import read_settings

LESSON = "chapters/02_attention_by_hand.html"
EXERCISE = "chapters/02_dot_product_attention.html"
EXERCISE_SOURCE = "chapters/02_dot_product_attention.ipynb"
# Hosts that serve scripts, styles or fonts; a page that names one depends on the network.
THIRD_PARTY_HOSTS = (
    "cdn.jsdelivr.net",
    "unpkg.com",
    "cdnjs.cloudflare.com",
    "fonts.googleapis.com",
    "fonts.gstatic.com",
    "ajax.googleapis.com",
    "code.jquery.com",
    "cdn.plot.ly",
    "polyfill.io",
    "stackpath.bootstrapcdn.com",
    "use.fontawesome.com",
    "mybinder.org",
)
DOCNAMES = toc_files(yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8")))
EXERCISES = [d for d in DOCNAMES if (ROOT / f"{d}.ipynb").is_file()]
GUIDE = "grading_guide"
# The whole site (pages, theme, vendored MathJax) and its largest page (with the images it shows).
SITE_BUDGET_MB = 25
PAGE_BUDGET_MB = 3


def page(book: BookBuild, name: str) -> str:
    path = book.html_dir / name
    assert path.is_file(), f"{name} was not built"
    return path.read_text(encoding="utf8")


def all_pages(book: BookBuild) -> list[Path]:
    return sorted(p for p in book.html_dir.rglob("*.html") if "_static" not in p.parts)


class _Resources(HTMLParser):
    """Collects what a page loads (scripts, styles, images, frames) and its inline scripts."""

    def __init__(self) -> None:
        super().__init__()
        self.loads: list[str] = []
        self.inline_scripts: list[str] = []
        self.images: list[str] = []
        self.links: list[str] = []
        self._in_inline_script = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "script":
            if attrs.get("src"):
                self.loads.append(attrs["src"])
            elif attrs.get("type", "text/javascript") in ("text/javascript", "module"):
                self._in_inline_script = True
                self.inline_scripts.append("")
        elif (
            tag == "link"
            and attrs.get("href")
            and attrs.get("rel") in ("stylesheet", "preload", "modulepreload", "icon")
        ):
            self.loads.append(attrs["href"])
        elif tag in ("img", "iframe", "source", "video", "audio") and attrs.get("src"):
            self.loads.append(attrs["src"])
            if tag == "img":
                self.images.append(attrs["src"])
        elif tag == "a" and attrs.get("href"):
            self.links.append(attrs["href"])

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_inline_script = False

    def handle_data(self, data):
        if self._in_inline_script:
            self.inline_scripts[-1] += data


def resources(html: str) -> _Resources:
    parser = _Resources()
    parser.feed(html)
    return parser


def test_build_has_no_warnings(book):
    warnings = [line for line in book.log.splitlines() if "WARNING" in line]
    assert not warnings, "the build logged warnings:\n" + "\n".join(warnings)
    assert "ERROR" not in book.log, book.log[-6000:]


# CPU seconds a cold build may take: the lessons' code and Sphinx, whatever else runs on the machine (its wall clock
# is not a measure of the book: measured here, 420 s while other work kept both cores busy).
BUILD_CPU_BUDGET_S = 900


def test_build_is_fast_enough(book):
    """The build's CPU time (every lesson executed, as on a fresh clone) stays within budget: a lesson that starts
    training for real shows up here, while a busy machine does not fail it. With a warm execution cache (a rebuild)
    the lessons do not run and it is far less."""
    assert book.cpu_seconds < BUILD_CPU_BUDGET_S, (
        f"the book took {book.cpu_seconds:.0f} s of CPU ({book.seconds:.0f} s of wall clock) to build; keep it under "
        f"{BUILD_CPU_BUDGET_S} s"
    )


def test_lesson_shows_the_computed_numbers(book):
    html = page(book, LESSON)
    text = re.sub(r"<[^>]+>", " ", html)
    # Worked example 1: unscaled (what the copied notes compute) and scaled (what the formula says).
    for number in ["0.731", "0.269", "12.69", "0.670", "0.330", "13.30"]:
        assert number in text, f"worked example 1: {number} not on the lesson page"
    # Worked example 2.
    for number in ["0.6698", "0.3302", "6.6976", "3.3024"]:
        assert number in text, f"worked example 2: {number} not on the lesson page"
    # Glue leftovers would show up as role syntax or as numpy reprs.
    for leftover in ["glue:", "np.float64", "{glue"]:
        assert leftover not in text, f"unrendered glue on the lesson page: {leftover!r}"


def test_lesson_has_its_figures(book):
    found = resources(page(book, LESSON)).images
    pngs = [src for src in found if src.endswith(".png")]
    # the heatmap, the variance plot and the saturation plot
    assert len(pngs) >= 3, f"expected at least 3 plots on the lesson page, found {found}"
    for src in pngs:
        image = (book.html_dir / "chapters" / src).resolve()
        assert image.is_file() and image.stat().st_size > 5_000, f"{src} is missing or empty"


def test_lesson_links_to_the_exercise(book):
    links = resources(page(book, LESSON)).links
    assert any(link.split("#")[0] == "02_dot_product_attention.html" for link in links), links


def test_exercise_page_has_a_colab_button(book):
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    repo = urlparse(config["repository"]["url"]).path.strip("/")
    branch = config["repository"]["branch"]
    expected = f"https://colab.research.google.com/github/{repo}/blob/{branch}/{EXERCISE_SOURCE}"
    links = resources(page(book, EXERCISE)).links
    assert expected in links, f"no 'Open in Colab' link {expected} on the exercise page; links: {links}"
    assert (ROOT / EXERCISE_SOURCE).is_file()


def test_exercise_is_rendered_not_executed(book):
    html = page(book, EXERCISE)
    assert "YOUR CODE HERE" in html
    assert "NotImplementedError" in html  # the source is shown ...
    assert "Traceback" not in html, "the exercise notebook was executed during the build"  # ... but not run


def test_repository_button_and_source_download(book):
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    html = page(book, "intro.html")
    assert config["repository"]["url"] in resources(html).links, "the repository button is missing"
    assert (book.html_dir / "_sources" / EXERCISE_SOURCE).is_file(), "the exercise cannot be downloaded"


@pytest.mark.parametrize("docname", DOCNAMES)
def test_pages_exist(book, docname):
    page(book, f"{docname}.html")


@pytest.mark.parametrize("docname", EXERCISES)
def test_exercise_download_button_gives_the_student_notebook(book, docname):
    """The download menu of an exercise page links to the released notebook, byte for byte."""
    links = resources(page(book, f"{docname}.html")).links
    name = Path(docname).name
    downloads = [link for link in links if link.split("?")[0].endswith(f"_sources/{docname}.ipynb")]
    assert downloads, f"{docname}: no download link to the notebook; links: {links}"
    target = (book.html_dir / Path(docname).parent / downloads[0]).resolve()
    assert target.read_bytes() == (ROOT / f"{docname}.ipynb").read_bytes(), (
        f"the download of {name} is not the student notebook"
    )


def test_lesson_colab_buttons_open_lesson_notebooks(book):
    """A lesson page's Colab button opens its notebook in the public release's lessons folder
    (sphinx-book-theme would link the .md file, which Colab cannot open)."""
    settings = read_settings()
    html = page(book, LESSON)
    expected = settings.colab_url(f"{settings.lesson_dir}/{Path(LESSON).stem}.ipynb")
    colab = [link for link in resources(html).links if "colab.research.google.com" in link]
    assert colab == [expected], colab
    assert not [link for link in resources(page(book, f"{GUIDE}.html")).links if "colab" in link], (
        "the grading guide is not in the public release"
    )


def test_grading_guide_shows_real_output_of_this_build(book):
    assert f"{GUIDE}.md: Executed notebook" in book.log, "the grading guide was not executed by this build"
    text = re.sub(r"<[^>]+>", " ", page(book, f"{GUIDE}.html"))
    for expected in [
        "$ autograder release --check",
        "$ autograder publish --out public --through 05",
        "Published through chapter 05: chapters 00, 01, 02, 03, 04, 05; the course code answering exercises 01, 02, "
        "03, 04",
        "public/course/provided.py keeps",
        "is published after the deadline of exercise",
        "repairs,copied_from",
        "Grading 6 submission(s) of 6 (0 already graded and unchanged)",
        "Summary",
        "all tests passed",
        "failed: sdpa_mask",
        "the submitted file is empty",
        "Wrote 6 feedback file(s) under feedback",
        "Wrote 6 row(s) to grades.csv",
        "student,notebook,score,max_score",
        "Student,ID,SIS User ID,SIS Login ID,Section,02_dot_product_attention (1234)",
        "Points Possible,,,,,12",
        "Canvas will match them by name only",
        "Grading 0 submission(s) of 6 (6 already graded and unchanged)",
        "Grading 1 submission(s) of 6 (5 already graded and unchanged)",
        "$ autograder report --out report",
        # grace's failure (mask after softmax), counted in the report's table
        "each row of weights must still sum to 1",
    ]:
        assert expected in text, f"the grading guide does not show {expected!r}"
    assert "--no-sandbox" not in text or not Path("/usr/bin/bwrap").exists(), (
        "graded without the sandbox although bubblewrap is here"
    )
    report = page(book, f"{GUIDE}.html").split('id="the-class-report"', 1)[1].split('id="regrade"', 1)[0]
    images = re.findall(r'<img [^>]*src="(_images/[^"]+\.png)"', report)
    assert len(images) == 2, "the class report's histogram and pass-rate chart are shown"
    for image in images:
        assert (book.html_dir / image).stat().st_size > 5_000, f"{image} is not a real figure"


def test_site_size(book):
    """The site stays small: MathJax only as far as pages load it; the largest page is reported."""
    files = [p for p in book.html_dir.rglob("*") if p.is_file()]
    total = sum(p.stat().st_size for p in files)
    mathjax = book.html_dir / "_static" / "mathjax"
    unused = [
        name
        for name in ("tex-svg.js", "tex-mml-chtml.js", "tex-chtml-full.js", "mml-chtml.js", "node-main.js")
        if (mathjax / name).exists()
    ]
    assert not unused, f"MathJax components no page loads were vendored: {unused}"

    def weight(path: Path) -> int:
        images = [src for src in resources(path.read_text(encoding="utf8")).images if not urlparse(src).scheme]
        return path.stat().st_size + sum(
            (path.parent / src).stat().st_size for src in images if (path.parent / src).is_file()
        )

    pages = {p.relative_to(book.html_dir).as_posix(): weight(p) for p in all_pages(book)}
    largest = max(pages, key=pages.get)
    print(
        f"\nsite: {total / 1e6:.1f} MB in {len(files)} files "
        f"({sum(p.stat().st_size for p in mathjax.rglob('*') if p.is_file()) / 1e6:.1f} MB of MathJax); "
        f"largest page: {largest}, {pages[largest] / 1e6:.2f} MB with its images"
    )
    assert total < SITE_BUDGET_MB * 1e6, f"the site is {total / 1e6:.1f} MB"
    assert pages[largest] < PAGE_BUDGET_MB * 1e6, f"{largest} weighs {pages[largest] / 1e6:.1f} MB with its images"


def test_no_script_or_style_names_a_source_map_that_is_not_there(book):
    """The theme's source maps are dropped (book_fixes, fix 7): nothing may still point at one."""
    static = book.html_dir / "_static"
    dangling = []
    for path in [*static.rglob("*.js"), *static.rglob("*.css")]:
        for name in re.findall(r"sourceMappingURL=([^\s*]+)", path.read_text(encoding="utf8", errors="replace")):
            if not name.startswith("data:") and not (path.parent / name).is_file():
                dangling.append(f"{path.relative_to(book.html_dir)} -> {name}")
    assert not dangling, dangling


def test_no_page_loads_anything_from_another_host(book):
    problems = []
    for path in all_pages(book):
        html = path.read_text(encoding="utf8")
        for url in resources(html).loads:
            if urlparse(url).scheme or url.startswith("//"):
                problems.append(f"{path.relative_to(book.html_dir)} loads {url}")
        for host in THIRD_PARTY_HOSTS:
            if host in html:
                problems.append(f"{path.relative_to(book.html_dir)} names {host}")
    assert not problems, "\n".join(problems)


def test_mathjax_is_vendored_and_loaded_once(book):
    for name in ["intro.html", LESSON]:
        loads = resources(page(book, name)).loads
        mathjax = [u for u in loads if "mathjax" in u.lower()]
        # Exactly one MathJax script: vendored files must not be injected as extra scripts
        # (what happens to any .js placed in a book's _static folder).
        assert len(mathjax) == 1, f"{name}: MathJax scripts {mathjax}"
        assert mathjax[0].split("?")[0].endswith("_static/mathjax/tex-chtml.js"), mathjax
    static = book.html_dir / "_static" / "mathjax"
    assert (static / "tex-chtml.js").is_file()
    assert any((static / "output" / "chtml" / "fonts").rglob("*.woff")), "MathJax fonts were not copied"


def test_no_inline_script_is_emitted_twice(book):
    """Sphinx 7.4 emitted late-registered inline scripts twice (THEBE_JS_URL redeclared)."""
    for path in all_pages(book):
        scripts = [s.strip() for s in resources(path.read_text(encoding="utf8")).inline_scripts if s.strip()]
        duplicates = {s for s in scripts if scripts.count(s) > 1}
        assert not duplicates, f"{path.relative_to(book.html_dir)}: inline scripts emitted twice: {duplicates}"


def lesson_text(book: BookBuild) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", page(book, LESSON)).split())


def test_lesson_says_when_a_weight_is_exactly_zero(book):
    """Issue 21: 'nothing is ever exactly zero' contradicted chapter 01's exact one-hot and chapter 03's masks."""
    text = lesson_text(book)
    assert "nothing is ever exactly zero" not in text
    assert "score 800 below the best: weight 0.0" in text, "the page should show a weight that underflows to exactly 0"
    match = re.search(r"In float64 that happens about (\S+) below the largest score \(about (\S+) in float32\)", text)
    assert match, "the page should say where float64 and float32 underflow"
    # e^x rounds to 0 below half the smallest subnormal: 2^-1075 in float64, 2^-150 in float32
    assert float(match.group(1)) == round(1075 * math.log(2)) and float(match.group(2)) == round(150 * math.log(2))
    (tiny,) = re.search(r"a gap of 30 still leaves (\S+) \.", text).groups()
    assert float(tiny) == float(f"{math.exp(-30) / (1 + math.exp(-30)):.1e}")


def test_lesson_defines_its_terms_and_names_no_unnamed_source(book):
    """Issue 21: delta_ij, entropy in nats and logits are defined where they are used;
    no 'widely copied class notes'."""
    text = lesson_text(book)
    assert "where \\(\\delta_{ij}\\) is 1 when \\(i = j\\) and 0 otherwise" in text
    assert "its unit is the nat" in text and text.index("its unit is the nat") < text.index("nats")
    assert "Logits (the scores a softmax takes, chapter 01)" in text
    assert "widely copied" not in text and "class notes" not in text
    assert "Masks are chapter 03’s subject" in text or "Masks are chapter 03's subject" in text


def test_lesson_draws_the_computation_graph(book):
    """Issue 22: MatMul -> scale -> mask -> softmax -> MatMul, drawn from the steps the page runs on worked
    example 1; the figure's alt text says every step and the numbers it gives, recomputed here."""
    html = page(book, LESSON)
    tag = re.search(r'<img alt="(A computation graph[^"]+)"[^>]*src="([^"]+)"', html)
    assert tag, "the computation graph of attention, with its alt text, is not on the lesson page"
    alt, src = tag.groups()
    assert (book.html_dir / "chapters" / src).resolve().stat().st_size > 5_000
    order = re.findall(r"MatMul|Scale|Mask \(optional\)|SoftMax", alt)
    assert order == ["MatMul", "Scale", "Mask (optional)", "SoftMax", "MatMul"], order
    scaled = 1 / math.sqrt(2)
    w0 = math.exp(scaled) / (math.exp(scaled) + 1)
    for shown in (f"[{scaled:.3g}, 0]", f"[{w0:.2f}, {1 - w0:.2f}]", f"[{10 * w0 + 20 * (1 - w0):.3g}]"):
        assert shown in alt, f"the alt text should give {shown}, the value recomputed here"
    text = lesson_text(book)
    assert "(Vaswani et al., 2017, figure 2)" in text
    assert re.search(r"the last step gives \[\[(\S+)\]\] ; attention\(q, K, V\) gives \[\[(\S+)\]\]", text)


@pytest.mark.parametrize("where", ["solutions", "chapters"])
def test_exercise_02_says_where_masks_are_taught(where):
    nb = json.loads((ROOT / where / "02_dot_product_attention.ipynb").read_text(encoding="utf8"))
    markdown = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    assert "Masks are chapter 03's subject" in markdown


# Font sizes a lesson can give matplotlib text: a number (points) or a name (relative to the 10-pt font.size).
FONT_SIZE = re.compile(
    r"""\b(?:fontsize|labelsize|size|font\.size)["']?\s*[=:]\s*(?:(\d+(?:\.\d+)?)\b|["']([a-z-]+)["'])"""
)
NAMED_POINTS = {
    "xx-small": 5.8,
    "x-small": 6.9,
    "small": 8.3,
    "smaller": 8.3,
    "medium": 10,
    "large": 12,
    "larger": 12,
    "x-large": 14.4,
    "xx-large": 17.3,
}
SMALLEST_FIGURE_PT = 9


def test_lesson_figures_use_no_text_below_9_pt():
    """No text of a lesson's figures is set below 9 pt, the size test_browser's legibility rule is computed for
    (a figure shown at one CSS px per point or more at 390 px then shows all its text at 9 px or more).

    The lessons set matplotlib's font.size to 10; this reads every explicit size in their code cells
    (`fontsize=`, `labelsize=`, `size=`, `font.size`), numbers and matplotlib's names ("small" is 8.3 pt).
    """
    small = []
    for lesson in sorted((ROOT / "chapters").glob("*.md")):
        for n, line in enumerate(lesson.read_text(encoding="utf8").splitlines(), 1):
            for number, name in FONT_SIZE.findall(line):
                points = float(number) if number else NAMED_POINTS.get(name, 10)
                if points < SMALLEST_FIGURE_PT:
                    small.append(f"{lesson.name}:{n}: {points:g} pt: {line.strip()[:100]}")
    assert not small, f"figure text below {SMALLEST_FIGURE_PT} pt (unreadable at 390 px):\n" + "\n".join(small)
