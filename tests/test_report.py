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

# trudy's answer: a correct attention with two helper functions of her own.
ORIGINAL = '''def _flatten(t, n):
    return t.reshape(-1, *t.shape[-n:])

def _merge_heads(scores, lead, lq, lk):
    return scores.reshape(*lead, lq, lk)

def scaled_dot_product_attention(q, k, v, mask=None):
    """My attention."""
    lead = q.shape[:-2]
    lq, dk = q.shape[-2:]
    lk = k.shape[-2]
    qf, kf, vf = _flatten(q, 2), _flatten(k, 2), _flatten(v, 2)
    s = torch.bmm(qf, kf.transpose(1, 2)) * (1.0 / math.sqrt(dk))
    s = _merge_heads(s, lead, lq, lk)
    if mask is not None:
        s = torch.where(mask, s, torch.full_like(s, float("-inf")))
    w = softmax(s, dim=-1)
    out = torch.bmm(_flatten(w, 2), vf).reshape(*lead, lq, v.shape[-1])
    return out, w
'''
# mallory's: the same, renamed, commented, helpers moved below and swapped.
RENAMED_COPY = '''def scaled_dot_product_attention(query, key, value, mask=None):
    # attention, see lecture 2
    batch_dims = query.shape[:-2]
    n_q, depth = query.shape[-2:]
    n_k = key.shape[-2]
    a, b, c = flat(query, 2), flat(key, 2), flat(value, 2)
    raw = torch.bmm(a, b.transpose(1, 2)) * (1.0 / math.sqrt(depth))   # the scores
    raw = unflatten(raw, batch_dims, n_q, n_k)
    if mask is not None:
        raw = torch.where(mask, raw, torch.full_like(raw, float("-inf")))
    probs = softmax(raw, dim=-1)
    result = torch.bmm(flat(probs, 2), c).reshape(*batch_dims, n_q, value.shape[-1])
    return result, probs

def unflatten(x, batch_dims, n_q, n_k):
    return x.reshape(*batch_dims, n_q, n_k)

def flat(tensor, keep):
    """Merge the leading dimensions."""
    return tensor.reshape(-1, *tensor.shape[-keep:])
'''
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
    write_submission(make_submission(NOTEBOOK, {"scaled_dot_product_attention": ORIGINAL}), subs / "trudy" / f"{NOTEBOOK}.ipynb")
    write_submission(make_submission(NOTEBOOK, {"scaled_dot_product_attention": RENAMED_COPY}), subs / "mallory" / f"{NOTEBOOK}.ipynb")
    results, _ = grade_quietly(subs, workdir=work)
    assert results["trudy"].score == results["mallory"].score == results["ada"].score
    pages = write_report(root / "report", work)
    return root, work, pages, results


@pytest.fixture(scope="module")
def catalogue_report(catalogues, catalogue_workdir, tmp_path_factory):
    out = tmp_path_factory.mktemp("catalogue-report")
    pages = write_report(out, catalogue_workdir)
    return {p.stem: p for p in pages}


def test_one_page_per_notebook_with_inline_images(sample_class, catalogue_report):
    _, _, pages, _ = sample_class
    assert [p.name for p in pages] == [f"{NOTEBOOK}.html"]
    assert NOTEBOOK in catalogue_report
    for page in [pages[0], *catalogue_report.values()]:
        text = page.read_text()
        assert "id='histogram'" in text and "id='pass-rates'" in text
        assert len(re.findall(r"src='data:image/png;base64,", text)) == 2
        assert "http://" not in text and "https://" not in text and "<script" not in text


def test_hidden_tests_never_appear_in_the_report(sample_class, catalogue_report):
    assert len(HIDDEN) > 50
    for page in [sample_class[2][0], catalogue_report[NOTEBOOK]]:
        text = html.unescape(page.read_text())
        leaked = [line for line in HIDDEN if line in text]
        assert not leaked, f"the report shows hidden test source: {leaked[:3]}"


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


def test_reasons_and_repairs_are_listed(sample_class):
    text = html.unescape(sample_class[2][0].read_text())
    reasons = text.split("Submissions not graded normally", 1)[1].split("<h2>", 1)[0]
    for student, why in [("barbara", "not valid JSON"), ("edsger", "the submitted file is empty")]:
        assert student in reasons and why in reasons
    assert "alan" not in reasons, "a file a browser renamed is graded normally"
    repairs = text.split("<h2>Repairs the grader made</h2>", 1)[1].split("<h2>", 1)[0]
    assert "alan" in repairs and "file: submitted as" in repairs, "its note is listed with the repairs"


def test_the_planted_copy_is_flagged_in_the_report(sample_class):
    text = html.unescape(sample_class[2][0].read_text())
    similar = text.split("<h2>Similar answers</h2>", 1)[1].split("<h2>", 1)[0]
    first = re.search(r"<td class='num'>([0-9.]+) <span class='flag'>review</span></td><td>(\w+) & (\w+)</td>", similar)
    assert first, similar[:2000]
    assert {first.group(2), first.group(3)} == {"mallory", "trudy"}
    assert similar.count("class='flag'>review") == 1, "only the planted pair is marked for review"


def test_report_loads_in_chromium_offline_without_console_errors(browser, sample_class):
    url = sample_class[2][0].as_uri()
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        requests, blocked, errors = [], [], []

        def route(r):
            if r.request.url == url or r.request.url.startswith("data:"):
                r.continue_()
            else:
                blocked.append(r.request.url)
                r.abort()

        page.route("**/*", route)
        page.on("request", lambda req: requests.append(req.url))
        page.on("console", lambda msg: errors.append(f"console.{msg.type}: {msg.text}") if msg.type == "error" else None)
        page.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))
        page.goto(url, wait_until="load")
        page.wait_for_load_state("networkidle")
        page.wait_for_timeout(300)
        others = sorted({u for u in requests + blocked if u != url and not u.startswith("data:")})
        assert not others, f"the report made requests besides itself: {others}"
        assert not errors, "console errors:\n" + "\n".join(errors)
        for image in ("#histogram", "#pass-rates"):
            size = page.eval_on_selector(image, "img => [img.complete, img.naturalWidth, img.naturalHeight]")
            assert size[0] and size[1] > 200 and size[2] > 100, f"{image} did not load: {size}"
    finally:
        context.close()


def test_report_cli(sample_class, tmp_path):
    from test_grading import run_cli

    _, work, _, _ = sample_class
    made = run_cli("report", "--workdir", str(work), "--out", str(tmp_path / "r"))
    assert made.returncode == 0, made.stderr
    assert (tmp_path / "r" / f"{NOTEBOOK}.html").exists()
    missing = run_cli("report", "--workdir", str(tmp_path / "nothing"), "--out", str(tmp_path / "r2"))
    assert missing.returncode == 2 and "run `autograder grade` first" in missing.stderr
