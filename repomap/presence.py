"""Is there anything to map? The one check (and message) for a repository with no indexable file.

``RepoMap.open`` raises :func:`no_files_error` after indexing found nothing; every surface that
starts a run (``navigator explore|ask|investigate``, the MCP tools, a batch's job check) calls
:func:`require_files` first, so an empty tree is refused up front with the same line instead
of starting a run that fails at its scan. The check is discovery only (names and stats: the
engine's own ignore rules, name skips and its own cache and state folders) plus the
indexer's content skips (binary, generated, minified), read file by file until one would be
indexed: a tree of only binaries, or only ignored files, is refused here too.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path

from durable_navigator.navtypes.errors import RepoError
from durable_navigator.repomap.cache import own_dirs
from durable_navigator.repomap.config import DiscoverConfig
from durable_navigator.repomap.contentskip import content_skip
from durable_navigator.repomap.discover import check_root, discover
from durable_navigator.repomap.fsnames import fs_path
from durable_navigator.repomap.regular import read_regular

__all__ = ["no_files_error", "require_files"]

#: at most this many skip reasons are named in the message
_REASONS_SHOWN = 4


def no_files_error(shown_root: str, skipped: Mapping[str, int]) -> RepoError:
    """The error for a repository with nothing to index; ``skipped``: reason -> files skipped for it."""
    if skipped:
        ranked = sorted(skipped.items(), key=lambda p: (-p[1], p[0]))
        reasons = ", ".join(f"{n} {reason}" for reason, n in ranked[:_REASONS_SHOWN])
        more = ", …" if len(ranked) > _REASONS_SHOWN else ""
        what = f"all {sum(skipped.values())} of its files are skipped: {reasons}{more}"
    else:
        what = "it is empty, or every file in it is ignored"
    return RepoError(f"repository {shown_root!r} has no indexable files ({what}); "
                     "point at a repository with source files")


def require_files(root: Path | str, config: DiscoverConfig | None = None) -> Path:
    """The resolved root; :class:`RepoError` when it is missing, not a directory or has no file to index."""
    cfg = config or DiscoverConfig()
    real = check_root(Path(root))
    found = discover(real, cfg, own_dirs())
    skipped = Counter(found.skipped)
    for entry in found.files:
        reason = _content_skip(real, entry.path, cfg)
        if not reason:
            return real
        skipped[reason] += 1
    raise no_files_error(str(root), dict(skipped))


def _content_skip(root: Path, rel: str, cfg: DiscoverConfig) -> str:
    """Why the indexer would skip ``rel`` by its bytes (``unreadable`` too), or ``""``."""
    try:
        data = read_regular(fs_path(root, rel))  # rel is a display name (fsnames); never a FIFO
        if b"\0" in data[:cfg.binary_sniff_bytes]:
            return "binary"
    except OSError:
        return "unreadable"
    return content_skip(data, cfg)
