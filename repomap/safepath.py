"""Confine paths to the repository root (no ``..``, absolute paths or symlink escapes)."""

from __future__ import annotations

from pathlib import Path

from durable_navigator.navtypes.errors import PathEscapeError

__all__ = ["resolve_inside", "is_inside"]


def is_inside(root: Path, path: Path) -> bool:
    """True when the already-resolved ``path`` lies under the resolved ``root``."""
    return path == root or root in path.parents


def resolve_inside(root: Path, relpath: str | Path) -> Path:
    """Resolve ``relpath`` under ``root``; raise PathEscapeError if it leaves the root."""
    rel = str(relpath).replace("\\", "/")
    if not rel or rel.startswith("/") or (len(rel) > 1 and rel[1] == ":"):
        raise PathEscapeError(f"path {rel!r} must be relative to the repository root")
    if ".." in rel.split("/"):
        raise PathEscapeError(f"path {rel!r} contains '..'; use a path inside the repository")
    real_root = Path(root).resolve()
    target = (real_root / rel).resolve()
    if not is_inside(real_root, target):
        raise PathEscapeError(f"path {rel!r} resolves outside the repository (symlink escape); refused")
    return target
