"""What ``RepoMap`` offers callers that derive their own data from an index version (the chunk ranker).

Two stores: one blob per index version (``derived_blob``: a warm open of that version reads it
whole) and one row per file content (``derived_parts``: after an edit, a new index version
re-derives only the files whose content or path changed). Kept apart from ``engine.py`` so each
module stays small.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sqlite3
from typing import Any

from durable_navigator.navtypes.errors import PathEscapeError
from durable_navigator.repomap.build import _n_jobs, _parallel, content_hash
from durable_navigator.repomap.cache import IndexCache
from durable_navigator.repomap.fsnames import fs_path
from durable_navigator.repomap.index import SYM
from durable_navigator.repomap.render import read_current
from durable_navigator.repomap.safepath import resolve_inside

__all__ = ["DerivedMixin"]

log = logging.getLogger("durable_navigator.repomap.engine")


class DerivedMixin:
    """Derived-data stores and the per-file inputs to fill them (mixed into ``RepoMap``)."""

    root: Any
    config: Any
    _built: Any
    _cache: IndexCache
    _jobs: int | None
    _stats: dict[str, tuple[int, int, int, int]]
    _racy: frozenset[str]

    def _noticed(self, gone: dict[str, str]) -> None:  # provided by RepoMap
        raise NotImplementedError

    def _derived_key(self, kind: str) -> str:
        return hashlib.blake2b((kind + "\n" + self._built.index_hash).encode(), digest_size=16).hexdigest()

    def derived_blob(self, kind: str) -> Any:
        """A blob derived from this index version and stored by :meth:`store_derived` (``kind`` names its
        layout), memory-mapped read-only; ``None`` when none is stored. For what callers build from
        the whole index (the chunk ranker's chunks): a warm open reads it instead of rebuilding it."""
        return self._cache.map_structure(self._derived_key(kind))

    def store_derived(self, kind: str, data: bytes) -> None:
        """Store ``data`` as this index version's ``kind`` blob (atomically; best effort on a read-only cache)."""
        try:
            self._cache.put_structure(self._derived_key(kind), [data])
        except OSError as exc:
            log.warning("repo-map: could not store %s (%s); it is rebuilt next time", kind, exc)

    def current_text(self, path: str) -> tuple[str, str | None]:
        """An indexed file's whole text as it is now (what :meth:`read_lines` cuts its lines from: ``""``
        once it vanished, became unreadable or turned binary) and its content key when those are the
        bytes this index version indexed (``None`` when the file changed since: derive, do not store)."""
        if path not in self._built.records:
            resolve_inside(self.root, path)  # escapes raise PathEscapeError
            raise PathEscapeError(f"{path!r} is not an indexed file; pass a path listed in RepoMap.files")
        data, reason = read_current(resolve_inside(self.root, path), self.config.discover.binary_sniff_bytes)
        if data is None:
            self._noticed({path: reason})
            return "", None
        key: str = self._built.keys[path]
        return data.decode("utf-8", "replace"), key if key.split(":", 1)[0] == content_hash(data) else None

    def content_keys(self, paths: list[str]) -> dict[str, tuple[str, bool]]:
        """Per indexed path: its content key in this version, and whether its stat still proves the file
        holds that content (the engine's own rule, as for a render-memo hit: the same size, mtime,
        ctime and inode, and not racy). An unproven file may have changed, vanished or be unchanged:
        only reading it tells."""
        stats, racy, keys = self._stats, self._racy, self._built.keys
        out: dict[str, tuple[str, bool]] = {}
        for p in paths:
            key = keys.get(p)
            if key is None:
                continue
            proven = False
            if p not in racy:
                try:
                    st = os.stat(fs_path(self.root, p))
                    proven = stats.get(p) == (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
                except (OSError, ValueError):
                    pass
            out[p] = (key, proven)
        return out

    def symbol_spans(self, paths: list[str]) -> dict[str, list[tuple[int, int, str, str]]]:
        """``(start_line, end_line, name, kind)`` of each indexed path's symbols in source order (what
        :meth:`symbols` lists, read in one query without building a ``Symbol`` each)."""
        records = self._built.records
        records.prefetch(paths)
        s0, s1, nm, kd = SYM["start"], SYM["end"], SYM["name"], SYM["kind"]
        return {p: [(s[s0], s[s1], s[nm], s[kd]) for s in records.symbols(p)] for p in paths}

    def derive_jobs(self, n_files: int) -> int:
        """How many processes should derive something from ``n_files`` files: what indexing that many
        would use (``jobs`` of the open, ``parallel_min_files``), so ``jobs=1`` keeps all in-process."""
        return _n_jobs(self._jobs) if _parallel(n_files, self._jobs, self.config) else 1

    def derived_parts(self, keys: list[str]) -> dict[str, bytes]:
        """``key -> blob`` stored by :meth:`store_derived_parts` (absent keys left out; the caller's keys
        name their layout and content, as ``derived_blob`` kinds do)."""
        return self._cache.get_parts(keys)

    def store_derived_parts(self, rows: list[tuple[str, bytes]]) -> None:
        """Store ``(key, blob)`` rows; best effort: a locked or read-only cache only means they are derived again."""
        try:
            self._cache.put_parts(rows)
        except (sqlite3.Error, OSError) as exc:
            log.warning("repo-map: could not store %d derived parts (%s); they are rebuilt next time", len(rows), exc)
