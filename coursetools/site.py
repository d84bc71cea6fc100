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


@dataclass(frozen=True)
class Settings:
    """What `_config.yml` says about the public release."""

    title: str
    repository_url: str
    branch: str
    path_to_book: str
    lesson_dir: str
    private_pages: frozenset[str]

    @property
    def github(self) -> tuple[str, str]:
        match = re.match(r"https://github\.com/([^/]+)/([^/]+?)(?:\.git)?/?$", self.repository_url)
        if not match:
            raise PublishError(
                f"repository.url in _config.yml must be a GitHub repository URL (Colab opens GitHub), not "
                f"{self.repository_url!r}"
            )
        return match.group(1), match.group(2)

    def repo_path(self, relative: str) -> str:
        prefix = self.path_to_book.strip("/")
        return f"{prefix}/{relative}" if prefix else relative

    def colab_url(self, relative: str) -> str:
        org, repo = self.github
        return f"https://colab.research.google.com/github/{org}/{repo}/blob/{self.branch}/{self.repo_path(relative)}"

    def raw_url(self, relative: str) -> str:
        org, repo = self.github
        return f"https://raw.githubusercontent.com/{org}/{repo}/{self.branch}/{self.repo_path(relative)}"


def read_settings(root: Path = config.REPO_ROOT) -> Settings:
    book = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    repository = book.get("repository") or {}
    sphinx_config = (book.get("sphinx") or {}).get("config") or {}
    return Settings(
        title=book.get("title", ""),
        repository_url=repository.get("url", ""),
        branch=repository.get("branch", "main"),
        path_to_book=repository.get("path_to_book", "") or "",
        lesson_dir=sphinx_config.get("course_lesson_notebooks", "lessons"),
        private_pages=frozenset(sphinx_config.get("course_private_pages", [])),
    )
