"""The worker's opened repo-map engines: one current version per repository root.

A long-running worker serves many explorations while the repositories change
under it (a ``git checkout`` of another commit, files deleted or renamed by
hand). :class:`EngineCache` keeps the current ``repomap.RepoMap`` of each root
and asks it to refresh when a caller needs the tree as it is now:

* ``get(root, refresh=True)`` — scans and renders: re-discovers (one ``git
  ls-files`` or walk plus a ``stat`` per file) and keeps the same engine when
  nothing changed, else swaps in the new version. A refresh that started after
  the request was made answers it too, so concurrent scans of one root refresh once.
* ``get(root)`` — model calls, tools, planning: the current version, refreshed
  first only when that version has noticed a file gone while reading it.

Engine objects are immutable per version, so a render running on the old
version while another exploration refreshes simply finishes on it; its reads
of files that have vanished meanwhile are skipped files, not errors. The cache
holds at most ``max_roots`` roots (least recently used dropped: re-opening is a
warm start from the on-disk cache).
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from durable_navigator.navcore.run.sources import is_reference
from durable_navigator.navtypes.errors import RepoError

__all__ = ["EngineCache", "EngineFactory", "open_repomap", "INDEX_PROGRESS"]

#: repository root (resolved) -> an opened engine (``repomap.RepoMap`` or a test stand-in)
EngineFactory = Callable[[Path], Any]
#: a snapshot or git locator -> the directory it names on this host (``activities.sources``); blocking
SourceResolve = Callable[[str], Path]

#: roots kept open per worker by default
DEFAULT_MAX_ROOTS = 8


#: where an engine opened in this context reports indexing progress (``progress(done, total)``);
#: the scan activity sets it, and ``asyncio.to_thread`` carries it into the thread that opens
INDEX_PROGRESS: ContextVar[Callable[[int, int], None] | None] = ContextVar("index_progress", default=None)


def open_repomap(root: Path) -> Any:
    """The production engine factory: ``RepoMap.open`` with the default cache (and any progress sink)."""
    from durable_navigator.repomap import RepoMap

    # the learned navigator ranks this engine's chunks: the index cuts them while it parses
    return RepoMap.open(root, progress=INDEX_PROGRESS.get(), chunk_parts=True)


@dataclass
class _Slot:
    """One root's current engine and when its last validation started."""

    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    engine: Any = None
    #: ``time.monotonic()`` taken just before the discovery that produced/validated ``engine``
    validated_at: float = float("-inf")


class EngineCache:
    """Current engine per repository root, refreshed on demand (see the module docstring)."""

    def __init__(self, factory: EngineFactory = open_repomap, max_roots: int = DEFAULT_MAX_ROOTS,
                 resolve: SourceResolve | None = None) -> None:
        """``resolve``: how a snapshot or git locator becomes a directory here (None: only paths are served)."""
        if max_roots < 1:
            raise ValueError("max_roots must be at least 1")
        self._factory = factory
        self._max_roots = max_roots
        self._resolve = resolve
        self._slots: OrderedDict[Path, _Slot] = OrderedDict()
        #: locator -> its directory on this host (trees are immutable: resolved once)
        self._located: dict[str, Path] = {}

    def peek(self, repo_root: str | Path) -> Any | None:
        """The cached engine of ``repo_root`` without opening or refreshing anything."""
        located = self._located.get(str(repo_root))
        slot = self._slots.get(located or Path(repo_root).expanduser().resolve())
        return slot.engine if slot is not None else None

    async def _root(self, repo_root: str | Path) -> Path:
        """The directory ``repo_root`` (a path, or a snapshot / git locator) names on this host."""
        text = str(repo_root)
        if not is_reference(text):
            return Path(repo_root).expanduser().resolve()
        known = self._located.get(text)
        if known is None or not known.is_dir():  # new here, or its tree was removed from the cache since
            if self._resolve is None:
                raise RepoError("this worker cannot fetch repositories by snapshot or git URL; run `navigator "
                                "worker` with the same artifacts: section as the command that asked")
            self._located[text] = await asyncio.to_thread(self._resolve, text)
        return self._located[text]

    async def get(self, repo_root: str | Path, *, refresh: bool = False) -> Any:
        """The engine of ``repo_root``: opened if new; with ``refresh``, as the tree is now.

        ``repo_root`` is a path or a snapshot / git locator (materialized here on first use).
        RepoError when the root is not a directory (any more).
        """
        asked_at = time.monotonic()
        root = await self._root(repo_root)
        slot = self._slots.get(root)
        if slot is None:
            slot = self._slots[root] = _Slot()
        self._slots.move_to_end(root)
        if slot.engine is not None and not refresh and not _noticed_change(slot.engine):
            return slot.engine  # no waiting behind another root's or this root's refresh
        async with slot.lock:
            if slot.engine is not None and slot.validated_at >= asked_at:
                return slot.engine  # validated by a refresh that started after this request
            started = time.monotonic()
            try:
                slot.engine = await asyncio.to_thread(self._load, root, slot.engine)
            except RepoError:
                slot.engine = None  # the root is gone: the next call opens it anew
                raise
            slot.validated_at = started
            engine = slot.engine
        self._evict()
        return engine

    def _load(self, root: Path, current: Any) -> Any:
        if current is not None:
            refresh = getattr(current, "refresh", None)
            if refresh is not None:
                return refresh()
        if not root.is_dir():
            raise RepoError(f"repository {root} does not exist or is not a directory; pass a repo path")
        return self._factory(root)

    def _evict(self) -> None:
        while len(self._slots) > self._max_roots:
            root, slot = next(iter(self._slots.items()))
            if slot.lock.locked():
                break  # in use right now; dropped on a later call
            del self._slots[root]


def _noticed_change(engine: Any) -> bool:
    """Whether the engine has read a file that is gone: the tree moved since its version."""
    vanished = getattr(engine, "vanished", None)
    return bool(vanished()) if vanished is not None else False
