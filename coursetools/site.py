"""The public release's settings, read from `_config.yml`: its repository (for Colab and the site's buttons),
the folder of lesson notebooks, the pages for instructors only. Shared by the modules that write the release."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from autograder import config
from autograder.errors import UsageError


class PublishError(UsageError, ValueError):
    """The course repository cannot be published as it is (the message says why and what to do)."""


def github_repository(url: str) -> tuple[str, str]:
    """(owner, name) of a GitHub repository URL; PublishError for any other URL."""
    match = re.match(r"https://github\.com/([^/]+)/([^/]+?)(?:\.git)?/?$", url)
    if not match:
        raise PublishError(
            f"repository.url in _config.yml must be a GitHub repository URL (Colab opens GitHub), not {url!r}"
        )
    return match.group(1), match.group(2)


@dataclass(frozen=True)
class BookSettings:
    """What `_config.yml` says about the public release."""

    title: str
    repository_url: str
    branch: str
    path_to_book: str
    lesson_dir: str
    private_pages: frozenset[str]

    @property
    def github(self) -> tuple[str, str]:
        return github_repository(self.repository_url)

    def repo_path(self, relative: str) -> str:
        prefix = self.path_to_book.strip("/")
        return f"{prefix}/{relative}" if prefix else relative

    def colab_url(self, relative: str) -> str:
        org, repo = self.github
        return f"https://colab.research.google.com/github/{org}/{repo}/blob/{self.branch}/{self.repo_path(relative)}"

    def raw_url(self, relative: str) -> str:
        org, repo = self.github
        return f"https://raw.githubusercontent.com/{org}/{repo}/{self.branch}/{self.repo_path(relative)}"


def read_settings(root: Path = config.REPO_ROOT, on_github: bool = False) -> BookSettings:
    """`_config.yml`'s settings of the release; `on_github`: refuse now a repository URL that is not GitHub's
    (Colab opens notebooks from GitHub only), before anything is written."""
    book = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    repository = book.get("repository") or {}
    sphinx_config = (book.get("sphinx") or {}).get("config") or {}
    settings = BookSettings(
        title=book.get("title", ""),
        repository_url=repository.get("url", ""),
        branch=repository.get("branch", "main"),
        path_to_book=repository.get("path_to_book", "") or "",
        lesson_dir=sphinx_config.get("course_lesson_notebooks", "lessons"),
        private_pages=frozenset(sphinx_config.get("course_private_pages", [])),
    )
    if on_github:
        github_repository(settings.repository_url)
    return settings
