"""The class report (`autograder report`): built from the work dir of the sample class and of
the chapter-02 catalogue (graded once per session in conftest), never by grading again.

The sample class is the demo class plus a planted pair: `mallory` handed in `trudy`'s answer
with its variables renamed and its helper functions reordered (it must be flagged), and
nothing else is graded here.
"""

from __future__ import annotations

import html
import re
from collections import Counter

import pytest

from autograder.model.notebooks import read, secret_lines, source_notebook
from autograder.reporting.export import rows as export_rows
from autograder.reporting.report import write_report
from conftest import NOTEBOOK, grade_quietly
from coursetools.samples import make_submission, write_demo_class, write_submission
from helpers import ORIGINAL, RENAMED_COPY, offline_page

HIDDEN = secret_lines(read(source_notebook(NOTEBOOK)))


def count_table(page: str) -> dict[str, int]:
    """{cell: students counted in the failure table} read back from the report's HTML."""
    counts: Counter = Counter()
    for cell, count in re.findall(r"<tr data-cell='([^']+)'>.*?<td class='num count'>(\d*)</td>", page):
        counts[html.unescape(cell)] += int(count or 0)
    return dict(counts)


@pytest.fixture(scope="module")
def sample_class(tmp_path_factory):
    root = tmp_path_factory.mktemp("report-class")
    subs, work = root / "submissions", root / "grading"
    write_demo_class(subs)
    write_submission(
        make_submission(NOTEBOOK, {"scaled_dot_product_attention": ORIGINAL}), subs / "trudy" / f"{NOTEBOOK}.ipynb"
    )
    write_submission(
        make_submission(NOTEBOOK, {"scaled_dot_product_attention": RENAMED_COPY}),
        subs / "mallory" / f"{NOTEBOOK}.ipynb",
    )
    results, _ = grade_quietly(subs, workdir=work)
    assert results["trudy"].score == results["mallory"].score == results["ada"].score
    pages = write_report(root / "report", work)
    return root, work, pages, results


@pytest.fixture(scope="module")
def catalogue_report(catalogues, catalogue_workdir, tmp_path_factory):
    out = tmp_path_factory.mktemp("catalogue-report")
    pages = write_report(out, catalogue_workdir)
    return {p.stem: p for p in pages}


@pytest.mark.grading
def test_one_page_per_notebook_with_inline_images(sample_class, catalogue_report):
    _, _, pages, _ = sample_class
    assert [p.name for p in pages] == [f"{NOTEBOOK}.html"]
    assert NOTEBOOK in catalogue_report
    for page in [pages[0], *catalogue_report.values()]:
        text = page.read_text()
        assert "id='histogram'" in text and "id='pass-rates'" in text
        assert len(re.findall(r"src='data:image/png;base64,", text)) == 2
        assert "http://" not in text and "https://" not in text and "<script" not in text


@pytest.mark.grading
def test_hidden_tests_never_appear_in_the_report(sample_class, catalogue_report):
    assert len(HIDDEN) > 50
    for page in [sample_class[2][0], catalogue_report[NOTEBOOK]]:
        text = html.unescape(page.read_text())
        leaked = [line for line in HIDDEN if line in text]
        assert not leaked, f"the report shows hidden test source: {leaked[:3]}"


@pytest.mark.grading
def test_failure_table_counts_what_the_export_says(catalogues, catalogue_workdir, catalogue_report):
    header, data = export_rows(catalogue_workdir)
    page = catalogue_report[NOTEBOOK].read_text()
    table = count_table(page)
    mine = [row for row in data if row["notebook"] == NOTEBOOK]
    cells = [c for c in header if c in table]
    assert cells, "no graded cell in the failure table"
    for cell in cells:
        maximum = next(c.max_points for c in catalogues[NOTEBOOK]["solution"].cells if c.grade_id == cell)
        failed = sum(1 for row in mine if float(row[cell]) < maximum)
        assert table[cell] == failed, f"{cell}: the report counts {table[cell]} failures, the export {failed}"
    # the hardest cell comes first
    order = re.findall(r"<td rowspan='\d+'><code>([^<]+)</code></td><td rowspan='\d+' class='num'>(\d+)/(\d+)", page)
    rates = [int(p) / int(n) for _, p, n in order]
    assert rates == sorted(rates)


@pytest.mark.grading
def test_failure_messages_link_to_anonymised_answer_code(sample_class):
    _, _, pages, results = sample_class
    text = pages[0].read_text()
    # grace fails sdpa_mask with the mask-after-softmax mistake: the message, its count, a link
    message = results["grace"].cells[[c.grade_id for c in results["grace"].cells].index("sdpa_mask")].message
    assert message and html.escape(message) in text
    links = re.findall(r"<a href='#(ex-[^']+)'>(student [A-Z]+)</a>", text)
    assert links
    for anchor, _who in links:
        assert f"id='{anchor}'" in text
    example = text.split("<h2>Example answers</h2>", 1)[1]
    assert "def scaled_dot_product_attention" in html.unescape(example)
    for student in ("grace", "linus", "trudy", "mallory", "ada"):
        assert student not in example, f"{student}'s name appears next to the example code"


@pytest.mark.grading
def test_reasons_and_repairs_are_listed(sample_class):
    text = html.unescape(sample_class[2][0].read_text())
    reasons = text.split("Submissions not graded normally", 1)[1].split("<h2>", 1)[0]
    for student, why in [("barbara", "not valid JSON"), ("edsger", "the submitted file is empty")]:
        assert student in reasons and why in reasons
    assert "alan" not in reasons, "a file a browser renamed is graded normally"
    repairs = text.split("<h2>Repairs the grader made</h2>", 1)[1].split("<h2>", 1)[0]
    assert "alan" in repairs and "file: submitted as" in repairs, "its note is listed with the repairs"


@pytest.mark.grading
def test_the_planted_copy_is_flagged_in_the_report(sample_class):
    text = html.unescape(sample_class[2][0].read_text())
    similar = text.split("<h2>Similar answers</h2>", 1)[1].split("<h2>", 1)[0]
    first = re.search(r"<td class='num'>([0-9.]+) <span class='flag'>review</span></td><td>(\w+) & (\w+)</td>", similar)
    assert first, similar[:2000]
    assert {first.group(2), first.group(3)} == {"mallory", "trudy"}
    assert similar.count("class='flag'>review") == 1, "only the planted pair is marked for review"


@pytest.mark.grading
def test_report_loads_in_chromium_offline_without_console_errors(browser, sample_class):
    with offline_page(browser, sample_class[2][0]) as visit:
        assert not visit.others, f"the report made requests besides itself: {visit.others}"
        assert not visit.errors, "console errors:\n" + "\n".join(visit.errors)
        for image in ("#histogram", "#pass-rates"):
            size = visit.page.eval_on_selector(image, "img => [img.complete, img.naturalWidth, img.naturalHeight]")
            assert size[0] and size[1] > 200 and size[2] > 100, f"{image} did not load: {size}"


@pytest.mark.grading
def test_report_cli(sample_class, tmp_path):
    from helpers import run_cli

    _, work, _, _ = sample_class
    made = run_cli("report", "--workdir", str(work), "--out", str(tmp_path / "r"))
    assert made.returncode == 0, made.stderr
    assert (tmp_path / "r" / f"{NOTEBOOK}.html").exists()
    missing = run_cli("report", "--workdir", str(tmp_path / "nothing"), "--out", str(tmp_path / "r2"))
    assert missing.returncode == 2 and "run `autograder grade` first" in missing.stderr


HOSTILE = (
    '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'
    '<img src="http://evil.example/beacon.png"><style>body{display:none}</style>'
    "[click](javascript:window.__pwned=3) ![b](http://evil.example/beacon-md.png)"
)


def test_student_text_in_the_report_is_text_in_chromium(browser, tmp_path):
    """Issue 30: a failure message, a reason and a repair note carry markup (student code prints them); the
    report shows them as text: nothing runs, nothing is fetched, nothing is hidden."""
    from autograder.model.notebooks import max_points
    from autograder.model.records import CellResult, Result
    from autograder.reporting.report import notebook_page

    points = max_points(read(source_notebook(NOTEBOOK)))
    cells = [CellResult(gid, 0.0, pts, f"AssertionError: {HOSTILE}") for gid, pts in points.items()]
    result = Result("ada", NOTEBOOK, 0.0, sum(points.values()), cells, reason=HOSTILE, repairs=[HOSTILE])
    page = tmp_path / "report.html"
    page.write_text(notebook_page(NOTEBOOK, [result], tmp_path), encoding="utf-8")
    from html.parser import HTMLParser

    class Tags(HTMLParser):
        found: list[str] = []

        def handle_starttag(self, tag, attrs):
            if tag in ("script", "style", "iframe", "form", "link") or any(k.startswith("on") for k, _ in attrs):
                self.found.append(tag)
            self.found += [f"{tag} {k}={v}" for k, v in attrs if k in ("src", "href") and "evil" in (v or "")]

    body = Tags()
    body.feed(page.read_text(encoding="utf-8").split("<body>", 1)[1])
    assert not body.found, f"active markup in the report: {body.found}"
    with offline_page(browser, page) as visit:
        assert not visit.others, f"the report made requests: {visit.others}"
        assert visit.page.evaluate("window.__pwned === undefined")
        assert visit.page.locator("#failures").is_visible()
        assert visit.page.get_by_text("<script>window.__pwned=1</script>", exact=False).count() >= 1


# ---------------------------------------------------------------- WCAG 2.1 A/AA in light and dark (issue 33)
# The report has a light and a dark colour scheme (the reader's system setting, prefers-color-scheme). axe is injected
# as an inline script, which the report's Content-Security-Policy forbids: the test's browser context bypasses the
# policy (bypass_csp) for that alone; test_student_text_in_the_report_is_text_in_chromium keeps it in force.


@pytest.mark.grading
@pytest.mark.parametrize("width", [1280, 390])
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_report_passes_axe(browser, sample_class, scheme, width):
    import axe

    page_path = sample_class[2][0]
    text = page_path.read_text()
    assert "class='flag'>review" in text and "<pre tabindex='0'>" in text, "no flagged pair's code: the test is weak"
    with offline_page(browser, page_path, width=width, color_scheme=scheme, bypass_csp=True) as visit:
        page = visit.page
        found = axe.in_scheme(page, scheme)
        assert not found, f"{len(found)} WCAG 2.1 A/AA violation(s), {scheme} scheme, {width} px:\n" + "\n".join(
            found[:30]
        )
        assert page.evaluate("() => document.documentElement.scrollWidth") <= width, "the page scrolls sideways"


@pytest.mark.grading
def test_report_figures_say_their_numbers_and_tables_their_headers(sample_class):
    _, _, pages, results = sample_class
    text = pages[0].read_text()
    alts = dict(re.findall(r"<img id='([\w-]+)' alt='([^']*)'", text))
    graded = [r for r in results.values() if not r.internal_error]
    assert f"scores of {len(graded)} submission(s)" in html.unescape(alts["histogram"]), alts["histogram"]
    rates = re.findall(
        r"<td rowspan='\d+'><code>([^<]+)</code></td><td rowspan='\d+' class='num'>\d+/\d+ \((\d+)%\)", text
    )
    assert rates
    for cell, percent in rates[:12]:
        assert f"{html.unescape(cell)} {percent}%" in html.unescape(alts["pass-rates"]), (cell, alts["pass-rates"])
    assert "<th>" not in text and "<th scope='col'></th>" not in text, "a column header without scope or name"


def test_the_pass_rate_chart_is_not_colour_alone():
    """Cells under half are vermillion and hatched, the rest blue (Okabe and Ito's colours): the hatching tells them
    apart to a reader who cannot tell the colours apart, or prints the page in grey."""
    import base64
    import io

    import numpy as np
    from matplotlib.image import imread

    from autograder.model.records import Result
    from autograder.reporting.report import BLUE, VERMILLION, _plots

    results = [Result(f"s{i}", NOTEBOOK, float(i), 4.0, []) for i in range(5)]
    _, bars = _plots(results, [("hard", 0.45), ("easy", 0.9)])
    image = imread(io.BytesIO(base64.b64decode(bars.split(",", 1)[1])), format="png")[..., :3]

    def near(colour: str) -> np.ndarray:
        rgb = np.array([int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)])
        return np.abs(image - rgb).max(axis=-1) < 0.04

    def bar(mask: np.ndarray) -> np.ndarray:
        """The image inside the bar drawn in a colour (rows with a long run of it: not the legend's patch)."""
        rows = np.nonzero(mask.sum(axis=1) > 40)[0]
        cols = np.nonzero(mask[rows].any(axis=0))[0]
        return image[rows.min() : rows.max() + 1, cols.min() : cols.max() + 1]

    vermillion, blue = near(VERMILLION), near(BLUE)
    assert vermillion.sum() > 200 and blue.sum() > 200, "a bar is missing or in another colour"
    assert not near("#c0504d").any(), "the old red is back"
    hard_bar, easy_bar = bar(vermillion), bar(blue)
    white = [(part.min(axis=-1) > 0.95).mean() for part in (hard_bar, easy_bar)]
    assert white[0] > 0.05, "the bar of a cell under half is not hatched"
    assert white[1] < 0.01, "the bar of a cell over half is hatched too"


def test_anonymous_letters_count_like_spreadsheet_columns():
    """The example answers are lettered A..Z, then AA, AB.. (no two students share a label, however many)."""
    from autograder.reporting.report import _letters

    assert [_letters(n) for n in (0, 1, 25, 26, 27, 51, 52, 701, 702)] == [
        "A",
        "B",
        "Z",
        "AA",
        "AB",
        "AZ",
        "BA",
        "ZZ",
        "AAA",
    ]
