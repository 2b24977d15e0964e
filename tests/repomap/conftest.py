"""Shared fixtures: copies of the fixture repos outside git, and a private cache dir."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from durable_navigator.repomap import RepoMap

from tests.support.repomap import FIXTURES, LANGUAGES


@pytest.fixture(scope="session")
def multi_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """All fixture languages in one repository."""
    root = tmp_path_factory.mktemp("multi") / "repo"
    root.mkdir()
    for lang in LANGUAGES:
        shutil.copytree(FIXTURES / lang, root / lang)
    return root


@pytest.fixture(scope="session")
def multi_engine(multi_repo: Path, tmp_path_factory: pytest.TempPathFactory) -> RepoMap:
    """One engine over the multi-language repo (reused across renders, as the worker does)."""
    return RepoMap.open(multi_repo, cache_dir=tmp_path_factory.mktemp("cache"), jobs=1)
