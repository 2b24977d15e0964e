"""Confine paths to the repository root (no ``..``, absolute paths or symlink escapes)."""

from __future__ import annotations

import os
from pathlib import Path

from durable_navigator.navtypes.errors import PathEscapeError
from durable_navigator.repomap.fsnames import fs_path

__all__ = ["resolve_inside", "is_inside"]


def is_inside(root: Path, path: Path) -> bool:
    """True when the already-resolved ``path`` lies under the resolved ``root``."""
    return path == root or root in path.parents


def resolve_inside(root: Path, relpath: str | Path) -> Path:
    """Resolve ``relpath`` under ``root``; raise PathEscapeError if it leaves the root.

    ``relpath`` is a display name (``fsnames``: escaped when not printable UTF-8) or a
    Windows-style path with backslashes, which is read as one with slashes unless a
    file of that very display name exists.
    """
    real_root = Path(root).resolve()
    rel = str(relpath)
    if "\\" in rel and not os.path.lexists(fs_path(real_root, rel)):
        rel = rel.replace("\\", "/")
    if not rel or rel.startswith("/") or (len(rel) > 1 and rel[1] == ":"):
        raise PathEscapeError(f"path {rel!r} must be relative to the repository root")
    if ".." in rel.split("/"):
        raise PathEscapeError(f"path {rel!r} contains '..'; use a path inside the repository")
    try:
        # realpath, not Path.resolve: the latter raises RuntimeError on a symlink loop (Python < 3.13)
        target = Path(os.path.realpath(fs_path(real_root, rel)))
    except ValueError:  # an embedded NUL (from an escape or the caller): no file has that name
        raise PathEscapeError(f"path {rel!r} is not a valid file name; use a path from the map") from None
    if not is_inside(real_root, target):
        raise PathEscapeError(f"path {rel!r} resolves outside the repository (symlink escape); refused")
    return target
