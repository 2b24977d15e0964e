"""The git origin of a tree that has no ``.git`` of its own: a snapshot materialized on another host.

A working tree explored by path inside git gives the engine two things besides its files: HEAD's
commit (in the index version, so in the map's header) and the repository's history (the offline
ranker's ``hist_*`` signals). A snapshot of that tree, materialized on a worker, has neither. So
the snapshot carries them — the commit and the raw ``git log`` text the history is parsed from —
and the worker writes them beside the tree as ``<tree>.origin.json``; :func:`origin_of` reads it
back for :func:`discover.git_commit` and :func:`chunkrank.fromengine.repo_history`, and the map of
the snapshot is byte-identical to the map of the tree it was taken from.

Only a tree without a ``.git`` of its own consults it; a real checkout always answers from git.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

__all__ = ["Origin", "origin_of", "write_origin", "ORIGIN_SUFFIX"]

#: the origin of tree ``T`` lives in the file ``T`` + this suffix (beside the tree, never inside it)
ORIGIN_SUFFIX = ".origin.json"


@dataclass(frozen=True)
class Origin:
    """HEAD's short commit of the tree's origin and its ``git log`` text (``""``: no history there)."""

    commit: str | None
    log: str


def _path(root: Path | str) -> Path:
    return Path(f"{os.fspath(root).rstrip('/')}{ORIGIN_SUFFIX}")


@lru_cache(maxsize=32)
def _read(path: Path, mtime_ns: int) -> Origin | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        commit, log = data.get("commit"), data.get("log", "")
    except (OSError, ValueError, AttributeError):
        return None  # unreadable or not ours: the tree simply has no known origin
    if (commit is not None and not isinstance(commit, str)) or not isinstance(log, str):
        return None
    return Origin(commit, log)


def origin_of(root: Path | str) -> Origin | None:
    """The recorded origin of the tree at ``root``, or None (no such file: a plain folder)."""
    path = _path(root)
    try:
        mtime = path.stat().st_mtime_ns
    except OSError:
        return None
    return _read(path, mtime)


def write_origin(root: Path | str, origin: Origin) -> None:
    """Record ``origin`` for the tree that will be at ``root`` (atomically; before the tree is put in place)."""
    path = _path(root)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump({"commit": origin.commit, "log": origin.log}, handle)
    os.replace(tmp, path)
