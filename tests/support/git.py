"""A throw-away git repository for tests (isolated from the user's git configuration)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

__all__ = ["git", "init_repo", "commit_all"]


def git(root: Path, *args: str) -> str:
    """Run ``git -C root args`` with a private identity and no global/system config; its stdout."""
    env = {**os.environ, "GIT_AUTHOR_NAME": "test", "GIT_AUTHOR_EMAIL": "test@example.invalid",
           "GIT_COMMITTER_NAME": "test", "GIT_COMMITTER_EMAIL": "test@example.invalid",
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    out = subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True, env=env)
    return out.stdout.strip()


def init_repo(root: Path) -> None:
    """``git init`` on branch main."""
    git(root, "init", "-q", "-b", "main")


def commit_all(root: Path, message: str) -> str:
    """Stage everything, commit, and return the commit id."""
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD")
