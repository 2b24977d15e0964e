"""The loaded index records: heads in memory, symbols read from the cache when a render needs them.

A file's record (``index.REC``) is its *head* -- status, language, size, line
count, decode flag, parse error, level costs -- plus its symbols with their
signatures and docstrings, which are nine tenths of its size. Ranking and
budget fitting need every head; only the files a render shows at level 2 or 3
(and symbol queries) need symbols. :class:`Records` keeps the heads and reads
a file's symbols from the cache on first use, so opening an index of the
stdlib reads 0.2 MB instead of 11 MB, and a 20,000-file tree's index never
has all its symbols in memory.

``records[path]`` is a plain record tuple (a dict lookup, as before: renders
index every file's head several times) whose symbols slot is a
:class:`LazySymbols` sequence that reads them on first use.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

__all__ = ["LazySymbols", "Records", "HEAD_FIELDS"]

log = logging.getLogger("durable_navigator.repomap.records")

#: fields of a record before its symbols (``index.REC``: status .. costs)
HEAD_FIELDS = 7


class LazySymbols(Sequence[tuple]):
    """A file's symbols, read from the cache when first indexed, iterated or measured."""

    __slots__ = ("_owner", "_path")

    def __init__(self, owner: "Records", path: str) -> None:
        self._owner = owner
        self._path = path

    def _get(self) -> tuple:
        return self._owner.symbols(self._path)

    def __len__(self) -> int:
        return len(self._get())

    def __getitem__(self, i):  # type: ignore[no-untyped-def]
        return self._get()[i]

    def __iter__(self) -> Iterator[tuple]:
        return iter(self._get())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LazySymbols):
            other = other._get()
        return self._get() == other if isinstance(other, tuple) else NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"LazySymbols({self._path!r})"


class Records(dict[str, tuple]):
    """``path -> record tuple``; the symbols slot of each is lazy, loaded by content key, then kept."""

    def __init__(self, heads: dict[str, tuple], keys: dict[str, str],
                 load: Callable[[list[str]], dict[str, Any]]) -> None:
        """``heads``: record heads by path; ``load(keys)`` returns ``key -> symbols`` for the keys the cache holds."""
        super().__init__((p, (*h, LazySymbols(self, p))) for p, h in heads.items())
        self._keys = keys
        self._load = load
        self._symbols: dict[str, tuple] = {}
        self._lock = threading.Lock()

    def head(self, path: str) -> tuple:
        """The record without its symbols."""
        return self[path][:HEAD_FIELDS]

    def symbols(self, path: str) -> tuple:
        """The symbols of ``path`` (read from the cache once; empty when the cache lost them)."""
        got = self._symbols.get(path)
        if got is None:
            self.prefetch([path])
            got = self._symbols.get(path, ())
        return got

    def prefetch(self, paths: Iterable[str]) -> None:
        """Read the symbols of ``paths`` in one query (those not read yet)."""
        want = [p for p in paths if p not in self._symbols and p in self]
        if not want:
            return
        by_key = self._load(sorted({self._keys[p] for p in want}))
        with self._lock:
            for p in want:
                syms = by_key.get(self._keys[p])
                if isinstance(syms, tuple):
                    self._symbols[p] = syms
                else:
                    # gone from the cache, or written in another layout: the head's costs no
                    # longer match what can be shown, so the renderer's exact re-count decides
                    log.warning("repo-map: symbols of %s are missing from the cache; showing none", p)
                    self._symbols[p] = ()
