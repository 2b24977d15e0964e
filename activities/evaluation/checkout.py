"""Checkouts of a task's parent revision, outside the user's work tree, and reading their source.

``navigator eval`` explores each task at its parent commit: a detached ``git worktree`` of the
user's repository under the eval's own cache dir (``<cache>/navigator/eval/<repo key>/<parent12>``),
so the work tree the user edits is never touched, the commit under test is not checked out, and the
history the offline model reads ends at the parent (``HEAD`` of the worktree). Git records the
worktree in the repository's ``.git/worktrees``; :func:`remove_checkouts` drops them when the eval is done.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from durable_navigator.navtypes.errors import RepoError

__all__ = ["read_source", "checkout_root", "ensure_checkout", "remove_checkouts"]


def read_source(root: Path) -> Callable[[str], list[str]]:
    """``path -> lines`` of the checkout, decoded and split exactly as the engine does."""
    cache: dict[str, list[str]] = {}

    def lines(path: str) -> list[str]:
        if path not in cache:
            try:
                cache[path] = (root / path).read_bytes().decode("utf-8", "replace").splitlines()
            except OSError:
                cache[path] = []
        return cache[path]

    return lines


def checkout_root(cache_dir: Path, git_dir: Path, name: str) -> Path:
    """Where the checkouts of the repository ``name`` whose git dir is ``git_dir`` live (one folder each)."""
    key = hashlib.sha256(str(git_dir.resolve()).encode()).hexdigest()[:12]
    return cache_dir / "eval" / f"{name or 'repo'}-{key}"


def _git(git_dir: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], capture_output=True, check=False)


def ensure_checkout(git_dir: Path, root: Path, parent: str) -> Path:
    """A detached worktree of ``parent`` under ``root`` (made once; re-used by a resumed eval)."""
    dest = root / parent[:12]
    if (dest / ".git").exists():
        return dest
    if dest.exists():  # a half-made checkout of a killed run: git refuses a non-empty target
        shutil.rmtree(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    # --force: a killed run may have left git's record of this path behind (the folder gone). No
    # `worktree prune`: it would drop the user's own stale records too
    proc = _git(git_dir, "worktree", "add", "--detach", "--force", str(dest), parent)
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise RepoError(f"cannot check out {parent[:12]} into {dest}: {err[-1] if err else 'git failed'}")
    return dest


def remove_checkouts(git_dir: Path, root: Path) -> None:
    """Remove every checkout under ``root`` and git's record of it (no other worktree is touched)."""
    if root.is_dir():
        for dest in sorted(root.iterdir()):
            if (dest / ".git").exists():
                _git(git_dir, "worktree", "remove", "--force", str(dest))
        shutil.rmtree(root, ignore_errors=True)
