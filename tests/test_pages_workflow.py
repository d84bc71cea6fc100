"""The public release publishes its own website: `autograder publish` writes `.github/workflows/pages.yml`
(tools/public/pages.yml), validated here with actionlint (installed from PyPI with the dev dependencies), and read
for what it must do, against GitHub's documented way to publish a Pages site from a workflow ("Using custom
workflows with GitHub Pages"; actions/deploy-pages' README): a build job that uploads the site with
actions/upload-pages-artifact, a deploy job that `needs` it with `pages: write` and `id-token: write`, in the
`github-pages` environment, through actions/deploy-pages; and the README's one setting (Settings > Pages >
Source: GitHub Actions).

The build it runs is the public Makefile's `make book`, which is the build tests/test_publish.py runs on the
published tree (`PUBLIC_BUILD`, with the same execution cache): that test keeps proving it passes.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from book_build import ROOT
from coursetools.publish import PAGES_WORKFLOW, pages_url
from coursetools.site import read_settings
from publish_tree import PUBLIC_BUILD, published

ACTIONLINT = Path(sys.executable).parent / "actionlint"
DEFAULT_BRANCH_ONLY = "github.ref_name == github.event.repository.default_branch"


@pytest.fixture(scope="module")
def tree() -> tuple[Path, list[str]]:
    return published()


@pytest.fixture(scope="module")
def workflow(tree) -> dict:
    out, _ = tree
    return yaml.safe_load((out / PAGES_WORKFLOW).read_text(encoding="utf-8"))


def actionlint(root: Path) -> subprocess.CompletedProcess:
    """actionlint over every workflow of the repository at `root` (named: the tree is not a git clone yet)."""
    if not ACTIONLINT.exists():
        pytest.fail(f"{ACTIONLINT} is missing: install the dev dependencies (pip install -e '.[dev]')")
    files = sorted(p.relative_to(root).as_posix() for p in (root / ".github" / "workflows").glob("*.y*ml"))
    assert files, f"no workflow in {root}"
    return subprocess.run(
        [str(ACTIONLINT), "-no-color", "-oneline", *files], cwd=root, capture_output=True, text=True, timeout=120
    )


def test_actionlint_finds_nothing_in_the_published_workflow(tree):
    out, written = tree
    assert PAGES_WORKFLOW in written
    result = actionlint(out)
    assert result.returncode == 0 and not result.stdout.strip(), result.stdout + result.stderr


def test_actionlint_finds_a_broken_workflow(tree, tmp_path):
    """The check can fail: a job without `runs-on` and a step output that does not exist."""
    out, _ = tree
    broken = tmp_path / ".github" / "workflows" / "pages.yml"
    broken.parent.mkdir(parents=True)
    text = (out / PAGES_WORKFLOW).read_text(encoding="utf-8")
    text = text.replace("    runs-on: ubuntu-latest\n    timeout-minutes: 60\n", "    timeout-minutes: 60\n", 1)
    text = text.replace("steps.deployment.outputs.page_url", "steps.deploy.outputs.page_url")
    broken.write_text(text, encoding="utf-8")
    result = actionlint(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert '"runs-on" section is missing' in result.stdout and 'property "deploy" is not defined' in result.stdout, (
        result.stdout
    )


def test_the_workflow_builds_with_make_book_and_deploys_to_pages(workflow):
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as true
    assert "push" in triggers, "every push builds the site"
    build, deploy = workflow["jobs"]["build"], workflow["jobs"]["deploy"]
    steps = build["steps"]
    runs = [s.get("run", "") for s in steps]
    uses = {s["uses"].split("@")[0]: s for s in steps if "uses" in s}
    assert any(re.match(r"make book\b", run) for run in runs), "the public Makefile's build, nothing of its own"
    assert any("download.pytorch.org/whl/cpu" in run for run in runs), "torch's CPU build"
    python = uses["actions/setup-python"]["with"]["python-version"]
    assert python in ("3.10", "3.11", "3.12"), "a Python the release's requirements support"
    cached = [s["with"]["path"] for s in steps if s.get("uses", "").startswith("actions/cache@")]
    assert "_build/.jupyter_cache" in cached, "the executed lessons are cached between runs"
    assert uses["actions/upload-pages-artifact"]["with"]["path"] == "_build/html"
    assert deploy["needs"] == "build" and deploy["if"] == DEFAULT_BRANCH_ONLY
    assert uses["actions/upload-pages-artifact"]["if"] == DEFAULT_BRANCH_ONLY
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert deploy["environment"]["name"] == "github-pages"
    assert [s["uses"].split("@")[0] for s in deploy["steps"]] == ["actions/deploy-pages"]
    assert workflow["permissions"] == {"contents": "read"}, "nothing else may write"


def test_make_book_is_the_build_the_tests_run_on_the_published_tree(tree):
    out, _ = tree
    makefile = (out / "Makefile").read_text(encoding="utf-8")
    recipe = makefile.split("\nbook:", 1)[1].split("\n\n", 1)[0]
    assert "$(PY) " + " ".join(PUBLIC_BUILD) in recipe, recipe
    config = yaml.safe_load((out / "_config.yml").read_text(encoding="utf-8"))
    assert config["execute"]["execute_notebooks"] == "cache", "jupyter-book's cache: _build/.jupyter_cache"
    assert "--extra-index-url" in makefile and "PIP_ARGS" in makefile, "the workflow's CPU torch goes through PIP_ARGS"
    assert shutil.which("make") is not None


def test_the_readme_says_the_one_setting_to_switch_on(tree):
    out, _ = tree
    readme = " ".join((out / "README.md").read_text(encoding="utf-8").replace("**", "").split())
    assert "Settings > Pages > Build and deployment > Source: GitHub Actions" in readme
    assert pages_url(read_settings(ROOT)) in readme and PAGES_WORKFLOW in readme
    assert "{{" not in readme
