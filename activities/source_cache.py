"""This host's source cache, pruned: trees no run used for a while, blobs no tree links, mirrors no tree uses.

The cache (:func:`activities.sources.default_source_cache`) holds snapshot trees
(``snapshots/trees/<manifest sha256>``, hard links into ``snapshots/blobs``) and git checkouts
(``git/trees/<commit>``, sharing the objects of ``git/mirrors/<url hash>.git``). Every time a run's
activity resolves its source to a tree, the tree's folder time is set to now (:func:`mark_used`), so
the folder's modification time is its last use.

:func:`prune` removes trees last used before the cutoff (renamed aside first, so a reader never sees
half a tree; a run that needs one again rebuilds it, as on a new host), then snapshot blobs no tree
links any more (link count 1) stored before the cutoff, then mirrors no remaining checkout borrows
objects from and not fetched into since the cutoff. The cutoff (``navigator gc --caches
--older-than``, 7 days by default) is far longer than any activity, so a tree in use is never taken.
"""

from __future__ import annotations

import os
import shutil
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from durable_navigator.repomap.origin import ORIGIN_SUFFIX

__all__ = ["mark_used", "prune", "Pruned"]

_TRASH = ".trash-"


def mark_used(tree: Path) -> None:
    """Record that a run uses ``tree`` now (its folder's time; best effort: a read-only cache keeps its age)."""
    try:
        os.utime(tree)
    except OSError:
        pass


@dataclass
class Pruned:
    """What :func:`prune` removed (or, dry, would remove)."""

    trees: list[str] = field(default_factory=list)
    blobs: int = 0
    mirrors: list[str] = field(default_factory=list)
    #: bytes of the files removed (a tree's hard-linked blobs count with the blobs)
    bytes: int = 0


def _size(tree: Path) -> int:
    total = 0
    for top, _dirs, files in os.walk(tree):
        for name in files:
            try:
                st = os.lstat(os.path.join(top, name))
            except OSError:
                continue
            total += st.st_size if st.st_nlink == 1 else 0
    return total


def _old(path: Path, cutoff: float) -> bool:
    try:
        return path.stat().st_mtime < cutoff
    except OSError:
        return False


def _remove(path: Path) -> None:
    """Rename aside, then delete: a concurrent reader sees the whole folder or none."""
    trash = path.with_name(f"{_TRASH}{path.name}.{uuid.uuid4().hex[:8]}")
    try:
        os.rename(path, trash)
    except OSError:
        return  # gone meanwhile
    shutil.rmtree(trash, ignore_errors=True)


def _borrowed_mirrors(trees: Path) -> set[Path]:
    """The mirrors' object folders the remaining checkouts borrow from (``git clone --shared``)."""
    used: set[Path] = set()
    for alternates in trees.glob("*/.git/objects/info/alternates"):
        for line in alternates.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.strip():
                used.add(Path(line.strip()).resolve())
    return used


def prune(cache: Path, older_than_s: float, dry_run: bool = False, now: float | None = None) -> Pruned:
    """Remove what no run used for ``older_than_s`` seconds from the source cache at ``cache``."""
    cutoff = (time.time() if now is None else now) - older_than_s
    out = Pruned()
    for parent in (cache / "snapshots" / "trees", cache / "git" / "trees"):
        if not parent.is_dir():
            continue
        for tree in sorted(parent.iterdir()):
            if tree.name.startswith(".") or not tree.is_dir() or not _old(tree, cutoff):
                continue
            out.trees.append(str(tree))
            out.bytes += _size(tree)
            if not dry_run:
                _remove(tree)
                Path(f"{tree}{ORIGIN_SUFFIX}").unlink(missing_ok=True)
    blobs = cache / "snapshots" / "blobs"
    for blob in sorted(blobs.glob("*/*")) if blobs.is_dir() else []:
        try:
            st = blob.stat()
        except OSError:
            continue
        if st.st_nlink == 1 and st.st_mtime < cutoff and not blob.name.startswith("."):
            out.blobs += 1
            out.bytes += st.st_size
            if not dry_run:
                blob.unlink(missing_ok=True)
    mirrors = cache / "git" / "mirrors"
    borrowed = _borrowed_mirrors(cache / "git" / "trees")
    for mirror in sorted(mirrors.glob("*.git")) if mirrors.is_dir() else []:
        if (mirror / "objects").resolve() in borrowed or not _old(mirror, cutoff):
            continue
        out.mirrors.append(str(mirror))
        out.bytes += sum(p.stat().st_size for p in mirror.rglob("*") if p.is_file())
        if not dry_run:
            _remove(mirror)
    return out
