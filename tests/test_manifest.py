"""The chapter manifest (chapters.yml) and the course calendar that `publish` follows.

- the manifest agrees with what exists: every solutions/ notebook is a chapter's exercise, with a catalogue
  of implementations and a lesson test; `builds` is what its solution regions define; _toc.yml lists each
  lesson with its exercise beneath it, and the intro's chapter table has a row per chapter;
- `publish` at a moment of the term: only opened chapters; course code answering an exercise only after
  its deadline; a chapter whose pages need answers still due waits; an extension moves the answers with
  it; a lesson that uses its own exercise's answers is refused; no calendar publishes everything, warned.

Run: PATH=.venv/bin:$PATH .venv/bin/python -m pytest tests/test_manifest.py -q
"""

from __future__ import annotations

import ast
import re
from dataclasses import replace
from datetime import datetime, timedelta

import pytest
import yaml

from autograder import config
from autograder.cli import main as autograder_main
from autograder.model.notebooks import is_solution_cell, read, solution_paths
from book_build import ROOT
from coursetools.layout import IMPLEMENTATIONS_DIR
from coursetools.manifest import Manifest, ManifestError, load
from coursetools.pages import toc_files
from coursetools.publish import publish
from coursetools.site import PublishError

MANIFEST = load()
TOC = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))


def defined_in_solutions(notebook: str) -> list[str]:
    names = []
    for cell in read(config.SOLUTIONS_DIR / f"{notebook}.ipynb").cells:
        if is_solution_cell(cell) and cell.cell_type == "code":
            names += [n.name for n in ast.parse(cell.source).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
    return names


def test_every_solution_notebook_is_a_chapter_with_a_catalogue_and_a_lesson_test():
    exercises = {c.exercise: c for c in MANIFEST.chapters if c.exercise}
    lesson_tests = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "tests").glob("test_*.py"))
    for path in solution_paths():
        assert path.stem in exercises, f"solutions/{path.name} is no chapter's exercise in chapters.yml"
        chapter = exercises[path.stem]
        assert (IMPLEMENTATIONS_DIR / path.stem / "wrong").is_dir(), (
            f"{path.stem} has no catalogue (tests/implementations/{path.stem}/wrong)"
        )
        assert (IMPLEMENTATIONS_DIR / path.stem / "correct").is_dir(), (
            f"{path.stem} has no catalogue of correct implementations"
        )
        assert f'LESSON = "{chapter.lesson}.html"' in lesson_tests, (
            f"no test module checks the lesson {chapter.lesson} (LESSON = ...)"
        )
    assert set(exercises) == {p.stem for p in solution_paths()}, (
        "chapters.yml names an exercise with no solutions/ notebook"
    )


@pytest.mark.parametrize("chapter", [c for c in MANIFEST.chapters if c.exercise], ids=lambda c: c.number)
def test_builds_are_the_names_the_solution_defines(chapter):
    assert list(chapter.builds) == defined_in_solutions(chapter.exercise)


def test_the_toc_lists_each_lesson_with_its_exercise_beneath():
    listed = toc_files(TOC)
    pages = [page for chapter in MANIFEST.chapters for page in chapter.pages]
    assert [d for d in listed if d in set(pages)] == pages, (
        "_toc.yml's chapter pages differ from chapters.yml's (order included)"
    )
    private = set(yaml.safe_load((ROOT / "_config.yml").read_text())["sphinx"]["config"]["course_private_pages"])
    assert set(listed) - set(pages) <= {TOC["root"]} | private, "_toc.yml lists a page that is no chapter's"
    for part in TOC["parts"]:
        for entry in part["chapters"]:
            chapter = next((c for c in MANIFEST.chapters if c.lesson == entry["file"]), None)
            if chapter and chapter.exercise_page:
                assert [s["file"] for s in entry.get("sections", [])] == [chapter.exercise_page]


def _table_rows(text: str) -> dict[str, str]:
    """{number: row} of a chapter table: its rows start `| NN |`."""
    return {match[1]: match[0] for match in re.finditer(r"^\| (\d\d) \|.*$", text, re.MULTILINE)}


def table_mismatches(intro: str, readme: str, manifest: Manifest) -> list[str]:
    """What the intro's and docs/chapters.md's chapter tables say that chapters.yml does not: a row per chapter in its
    order, each naming the chapter's lesson, exercise notebook and the names the exercise builds. Only the prose of
    a row is typed by hand; every fact these checks read comes from the manifest, so a new chapter is one entry there
    and one row in each table."""
    found = []
    numbers = [c.number for c in manifest.chapters]
    for name, text in (("intro.md", intro), ("docs/chapters.md", readme)):
        if list(_table_rows(text)) != numbers:
            found.append(f"{name}: the table's rows are {list(_table_rows(text))}, chapters.yml has {numbers}")
    intro_rows, readme_rows = _table_rows(intro), _table_rows(readme)
    for chapter in manifest.chapters:
        wanted = {
            "intro.md": [f"{{doc}}`{chapter.lesson}`", *(f"`{name}`" for name in chapter.builds)],
            "docs/chapters.md": [f"`{chapter.lesson}.md`", *(f"`{name}`" for name in chapter.builds)],
        }
        if chapter.exercise:
            notebooks = [f"`chapters/{chapter.exercise}.ipynb`", f"`solutions/{chapter.exercise}.ipynb`"]
            wanted["docs/chapters.md"] += notebooks
        for name, rows in (("intro.md", intro_rows), ("docs/chapters.md", readme_rows)):
            row = rows.get(chapter.number, "")
            found += [f"{name}: chapter {chapter.number}'s row lacks {w}" for w in wanted[name] if w not in row]
    return found


def test_the_intro_and_docs_chapter_tables_agree_with_the_manifest():
    intro = (ROOT / "intro.md").read_text(encoding="utf-8")
    readme = (ROOT / "docs" / "chapters.md").read_text(encoding="utf-8")
    assert table_mismatches(intro, readme, MANIFEST) == []


def test_a_table_that_disagrees_with_the_manifest_is_named():
    intro = (ROOT / "intro.md").read_text(encoding="utf-8")
    readme = (ROOT / "docs" / "chapters.md").read_text(encoding="utf-8")
    last = MANIFEST.chapters[-1]
    renamed = replace(last, builds=(*last.builds, "NotWritten"))
    added = replace(last, number=f"{int(last.number) + 1:02d}")
    assert table_mismatches(intro, readme, replace(MANIFEST, chapters=(*MANIFEST.chapters[:-1], renamed))) == [
        f"intro.md: chapter {last.number}'s row lacks `NotWritten`",
        f"docs/chapters.md: chapter {last.number}'s row lacks `NotWritten`",
    ]
    missing = table_mismatches(intro, readme, replace(MANIFEST, chapters=(*MANIFEST.chapters, added)))
    assert missing[:2] and all("the table's rows are" in line for line in missing[:2]), missing
    dropped = readme.replace(f"`solutions/{last.exercise}.ipynb`", "")
    assert table_mismatches(intro, dropped, MANIFEST) == [
        f"docs/chapters.md: chapter {last.number}'s row lacks `solutions/{last.exercise}.ipynb`"
    ]


def test_the_example_term_is_consistent():
    """Each exercise is due before the next chapter opens, so `--through NN` is a moment of the calendar."""
    chapters = MANIFEST.chapters
    assert MANIFEST.has_calendar
    for before, after in zip(chapters, chapters[1:], strict=False):
        if before.due:
            assert before.due <= after.opens, f"{before.number} is due after {after.number} opens"
    moment = MANIFEST.at(chapters[7].opens)  # the moment chapter 07 opens
    assert moment.opened == MANIFEST.through("07").opened and moment.past_due == MANIFEST.through("07").past_due - {
        "00"
    }


def test_a_manifest_with_half_a_calendar_is_refused(tmp_path):
    text = (ROOT / "chapters.yml").read_text(encoding="utf-8")
    broken = re.sub(r'(number: "03"\n(?:    .*\n)*?)    opens: .*\n', r"\1", text, count=1)
    assert broken != text
    (tmp_path / "chapters.yml").write_text(broken)
    with pytest.raises(ManifestError, match="chapter 03: no `opens`"):
        load(tmp_path / "chapters.yml")


# --- publishing at moments of the term -------------------------------------------------------------


def shifted(manifest: Manifest, number: str, **changes) -> Manifest:
    chapters = tuple(replace(c, **changes) if c.number == number else c for c in manifest.chapters)
    return replace(manifest, chapters=chapters)


def definitions(path) -> set[str]:
    return {n.name for n in ast.parse(path.read_text()).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}


def test_through_07_publishes_chapters_00_to_07_and_answers_up_to_06(tmp_path):
    done = publish(tmp_path, through="07", check_release=False)
    assert done.chapters == [f"{n:02d}" for n in range(8)] and not done.held and not done.warnings
    provided = definitions(tmp_path / "course" / "provided.py")
    assert {"MultiHeadAttention", "PositionalEncoding", "scaled_dot_product_attention"} <= provided
    assert not provided & {"FeedForward", "EncoderLayer", "Encoder", "DecoderLayer", "Decoder", "Transformer"}, provided
    assert (
        "# `Encoder` is published after the deadline of exercise 07."
        in (tmp_path / "course" / "provided.py").read_text()
    )
    pages = toc_files(yaml.safe_load((tmp_path / "_toc.yml").read_text()))
    assert "chapters/07_encoder" in pages and not any(
        p.startswith(("chapters/08", "chapters/09", "chapters/10")) for p in pages
    )
    assert not list(tmp_path.glob("chapters/08_*")) and not list(tmp_path.glob("lessons/08_*"))
    intro = (tmp_path / "intro.md").read_text()
    assert "{doc}`chapters/08" not in intro, "a link to an unpublished page would break the public build"
    assert re.search(r"^\| 07 \|.*\| open: exercise due .* \|$", intro, re.MULTILINE)
    assert re.search(r"^\| 08 \| \*The decoder.*\| opens Mon 01 Mar 2027, 09:00 \|$", intro, re.MULTILINE)


def test_a_chapter_that_opens_before_the_answers_it_carries_are_due_waits(tmp_path):
    """Chapter 08 opens on Thursday while 07 is due on Sunday: 08's notebook and lesson carry the course's
    Encoder (exercise 07's answer), so 08 is held back until then, with the reason."""
    early = MANIFEST.chapter("07").due - timedelta(days=3)
    manifest = shifted(MANIFEST, "08", opens=early)
    done = publish(tmp_path / "a", at=early + timedelta(hours=1), manifest=manifest, check_release=False)
    assert "08" not in done.chapters and "07" in done.chapters
    assert "Encoder answers exercise 07" in done.held["08"], done.held
    done = publish(
        tmp_path / "b", at=MANIFEST.chapter("07").due + timedelta(minutes=1), manifest=manifest, check_release=False
    )
    assert "08" in done.chapters and not done.held
    assert "Encoder" in definitions(tmp_path / "b" / "course" / "provided.py")


def test_an_extension_keeps_the_answers_back(tmp_path):
    """Exercise 05 extended by two weeks: at chapter 06's opening its MultiHeadAttention is still not published,
    and chapter 07 (which gives it in a provided cell) waits for the new date too."""
    new_due = MANIFEST.chapter("05").due + timedelta(days=14)
    manifest = shifted(MANIFEST, "05", due=new_due)
    done = publish(tmp_path / "a", at=MANIFEST.chapter("06").opens, manifest=manifest, check_release=False)
    assert "06" in done.chapters and "MultiHeadAttention" not in definitions(tmp_path / "a" / "course" / "provided.py")
    done = publish(tmp_path / "b", at=MANIFEST.chapter("07").opens, manifest=manifest, check_release=False)
    assert "07" not in done.chapters and "MultiHeadAttention answers exercise 05" in done.held["07"]
    done = publish(tmp_path / "c", at=new_due, manifest=manifest, check_release=False)
    assert "07" in done.chapters and "MultiHeadAttention" in definitions(tmp_path / "c" / "course" / "provided.py")


def test_a_lesson_that_uses_its_own_exercises_answer_is_refused(tmp_path):
    """Lesson 04 imports the course's attention; were exercise 04 to ask for it, the chapter would hand it out."""
    chapter = MANIFEST.chapter("04")
    manifest = shifted(MANIFEST, "04", builds=chapter.builds + ("scaled_dot_product_attention",))
    with pytest.raises(
        PublishError, match="chapter 04's lesson or notebook uses .*scaled_dot_product_attention.*its own exercise"
    ):
        publish(tmp_path, through="04", manifest=manifest, check_release=False)


def test_before_the_term_nothing_but_the_front_page_is_published(tmp_path):
    done = publish(tmp_path, at=MANIFEST.chapters[0].opens - timedelta(days=1), check_release=False)
    assert done.chapters == [] and not list(tmp_path.glob("chapters/*")) and not (tmp_path / "course").exists()
    assert toc_files(yaml.safe_load((tmp_path / "_toc.yml").read_text())) == [TOC["root"]]


def test_without_a_calendar_everything_is_published_with_a_warning(tmp_path):
    manifest = replace(MANIFEST, chapters=tuple(replace(c, opens=None, due=None) for c in MANIFEST.chapters))
    done = publish(tmp_path, manifest=manifest, check_release=False)
    assert done.chapters == [c.number for c in MANIFEST.chapters]
    assert any("answers of exercises still open are then public" in w for w in done.warnings)
    assert {"FeedForward", "Encoder", "Transformer"} <= definitions(tmp_path / "course" / "provided.py")


def test_cli_publish_through_says_what_it_published(tmp_path, capsys):
    assert autograder_main(["publish", "--out", str(tmp_path / "out"), "--through", "03"]) == 0
    out = capsys.readouterr().out
    assert "Published through chapter 03: chapters 00, 01, 02, 03; the course code answering exercises 01, 02" in out
    with pytest.raises(SystemExit) as refused:  # argparse's refusal: --at's type
        autograder_main(["publish", "--out", str(tmp_path / "out"), "--at", "next week"])
    assert refused.value.code == 2 and "not an ISO 8601 time" in capsys.readouterr().err
    assert autograder_main(["publish", "--out", str(tmp_path / "out"), "--through", "42"]) == 2
    assert "no chapter '42'" in capsys.readouterr().err


def test_now_is_the_default(tmp_path, capsys):
    assert autograder_main(["publish", "--out", str(tmp_path / "out")]) == 0
    expected = [c.number for c in MANIFEST.chapters if c.opens <= datetime.now().astimezone()]
    out = capsys.readouterr().out
    assert f"chapters {', '.join(expected) or 'none (no chapter has opened yet)'}" in out
