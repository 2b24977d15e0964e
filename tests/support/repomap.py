"""Helpers shared by the repo-map engine tests (imported by module name)."""

from __future__ import annotations

import shutil
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "repos"
LANGUAGES = ("python", "javascript", "typescript", "go", "rust", "java", "c", "cpp", "ruby")


def copy_fixture(name: str, dest: Path) -> Path:
    """Copy one fixture repo to ``dest/name`` (outside git: a stable index version)."""
    target = dest / name
    shutil.copytree(FIXTURES / name, target)
    return target
