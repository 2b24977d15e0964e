"""``RepoMap``: the engine facade (open once, render many times, refresh when the tree may have moved).

Opening discovers and indexes the repository (through the persistent cache);
the ranking structure is loaded or built lazily on the first request and kept,
so a render with another flight plan or goal never re-parses anything. (An open
whose index workers parsed files builds it at once: it was fed their bags while
they ran, and only its finish is left.)
Thread-safe for concurrent renders (lazy state is built under a lock).

One ``RepoMap`` is one *version* of the tree: its files and records never
change. :meth:`RepoMap.refresh` re-discovers and returns the same object when
nothing changed (a ``git ls-files`` or walk plus one ``stat`` per file), else a
new ``RepoMap`` built through the cache, so a render running on the old version
is never disturbed by a refresh. Reading a file that has vanished (or turned
binary) since the version was built is not an error: renders hide such a file
and name it in the header, ``read_lines`` reads it as empty, and
:meth:`RepoMap.vanished` lists what was noticed, so a caller knows to refresh.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from durable_navigator.navtypes.errors import PathEscapeError
from durable_navigator.repomap.build import BuiltIndex, Progress, build_index, content_hash
from durable_navigator.repomap.cache import IndexCache, default_cache_dir, own_dirs
from durable_navigator.repomap.config import EngineConfig
from durable_navigator.repomap.discover import Discovery, check_root, discover, git_commit
from durable_navigator.repomap.fsnames import fs_path
from durable_navigator.repomap.presence import no_files_error
from durable_navigator.repomap.engine_derived import DerivedMixin
from durable_navigator.repomap.engine_query import LastUsed, QueryMixin, RequestContext
from durable_navigator.repomap.index import REC, full_bounds, full_cost
from durable_navigator.repomap.rank import STRUCTURE_FORMAT, RankStructure
from durable_navigator.repomap.regular import read_regular
from durable_navigator.repomap.render import RenderInput, metadata, read_current, render_plan, summaries
from durable_navigator.repomap.safepath import resolve_inside
from durable_navigator.repomap.symsearch import ChunkCache
from durable_navigator.repomap.types import LevelTokens, RankedFile, RenderResult

if TYPE_CHECKING:  # a pydantic model: the engine reads its fields, never builds one
    from durable_navigator.navtypes.flightplan import FlightPlan

__all__ = ["RepoMap"]

log = logging.getLogger("repomap")
#: renders of one version kept for a repeated plan (each holds the map text and one summary per file)
RENDER_MEMO = 4
#: rankings kept per engine version (one exploration ranks 4 plans: the goal alone, the survey's focus,
#: the choice's and the choice's check; about 15 MB each on a 20,000-file tree)
RANKING_MEMO = 4

#: bags loaded per sqlite query while building the ranking structure
_BAG_CHUNK = 512


class RepoMap(QueryMixin, DerivedMixin):
    """An indexed repository: ``render`` / ``rank`` / ``search`` / symbol queries."""

    def __init__(self, root: Path, config: EngineConfig, cache: IndexCache, built: BuiltIndex,
                 disc: Discovery, commit: str | None, open_ms: float, jobs: int | None = None) -> None:
        self.root = root
        self.config = config
        self._cache = cache
        #: left out of every discovery of this tree (see ``cache.own_dirs``)
        self._own = own_dirs(cache.dir)
        self._built = built
        self._jobs = jobs
        #: the index cuts the chunk ranker's parts as it parses (``open(chunk_parts=...)``)
        self._chunk_parts = False
        self._commit = commit
        self.files: list[str] = sorted(built.records)
        skipped = dict(disc.skipped)
        for k, v in built.skipped.items():
            skipped[k] = skipped.get(k, 0) + v
        self.skipped = dict(sorted(skipped.items()))
        #: every file of the tree that is not indexed: ``path -> reason`` (as counted in ``skipped``)
        self.skipped_files: dict[str, str] = dict(sorted({**disc.skipped_paths, **built.skipped_paths}.items()))
        self.index_version = (f"git:{commit}+" if commit else "") + f"idx:{built.index_hash[:16]}"
        self.open_ms = open_ms
        self._lock = threading.Lock()
        self._rs: RankStructure | None = None
        self._chunks = ChunkCache()
        self._renders: LastUsed[str, RenderResult] = LastUsed(RENDER_MEMO)
        #: the personalized rankings of the plans used last (``QueryMixin._request``)
        self._rankings: LastUsed[tuple, RequestContext] = LastUsed(RANKING_MEMO)
        self._xref = None  # References, built on the first callers/callees query
        # what refresh() compares a new discovery with (see _validated)
        self._stats: dict[str, tuple[int, int, int, int]] = {}
        self._racy: frozenset[str] = frozenset()
        self._vanished: dict[str, str] = {}
        self._validated(disc)
        self._disc_skips = disc.skipped_paths

    @classmethod
    def open(cls, root: str | Path, config: EngineConfig | None = None, cache_dir: Path | None = None,
             jobs: int | None = None, progress: Progress | None = None, chunk_parts: bool = False) -> "RepoMap":
        """Discover and index ``root`` (cached); RepoError when it is not a usable directory.

        ``progress(done, total)`` hears the indexing of files the cache lacks (see ``build_index``);
        ``chunk_parts``: the index also cuts the chunk ranker's per-file parts as it parses (an
        engine the learned navigator ranks chunks with; they are derived later otherwise).
        """
        t0 = time.perf_counter()
        cfg = config or EngineConfig()
        real = check_root(Path(root))
        cache = IndexCache(Path(cache_dir) if cache_dir is not None else default_cache_dir())
        own = own_dirs(cache.dir)
        disc = discover(real, cfg.discover, own)
        built = build_index(disc, cache, cfg, jobs, progress, chunk_parts)
        rm = cls._make(real, cfg, cache, disc, built, git_commit(real), jobs, t0, str(root))
        rm._chunk_parts = chunk_parts
        return rm

    @classmethod
    def _make(cls, real: Path, cfg: EngineConfig, cache: IndexCache, disc: Discovery, built: BuiltIndex,
              commit: str | None, jobs: int | None, t0: float, shown_root: str) -> "RepoMap":
        if not built.records:
            raise no_files_error(shown_root, dict(disc.skipped + built.skipped))
        rm = cls(real, cfg, cache, built, disc, commit, 0.0, jobs)
        if built.feed is not None:
            # finish the ranking structure the index fed now, not at the first request: its
            # buffers must not outlive an open that never ranks
            rm._structure()
        rm.open_ms = ms = (time.perf_counter() - t0) * 1e3
        log.debug("repo-map opened %s: %d files, %d parsed, %.0f ms", real, len(built.records), built.parsed, ms)
        return rm

    def close(self) -> None:
        """Close the cache connection (its pending log checkpointed); the engine is unusable after."""
        self._cache.close()

    # ---- versions -------------------------------------------------------------------
    def refresh(self) -> "RepoMap":
        """``self`` when the tree is as this version saw it, else a new ``RepoMap`` of the tree now.

        Sees deleted, renamed, added and changed files, skips that changed (a file
        grown oversized, a new lockfile) and another git commit. Unchanged, it
        costs one discovery (``git ls-files`` or a walk, one ``stat`` per file)
        plus a re-hash of files changed within the racy window. Stats changed
        but content not (files rewritten with the same bytes): a warm ``open``'s
        cost, and ``self`` is kept with its ranking structure. Changed: a new
        version, at a warm ``open``'s cost plus parsing the changed files.
        RepoError when the root is gone or has no indexable file left.
        """
        t0 = time.perf_counter()
        check_root(self.root)
        disc = discover(self.root, self.config.discover, self._own)
        commit = git_commit(self.root)
        if commit == self._commit and self._same_tree(disc):
            self._forget_vanished()
            return self
        built = build_index(disc, self._cache, self.config, self._jobs, chunk_parts=self._chunk_parts)
        if (commit == self._commit and built.index_hash == self._built.index_hash
                and disc.skipped_paths == self._disc_skips and built.skipped_paths == self._built.skipped_paths):
            # stats moved, content did not (files rewritten with the same bytes, a checkout
            # and back): keep this version and its ranking structure, remember the new stats
            self._validated(disc)
            self._forget_vanished()
            return self
        return self._make(self.root, self.config, self._cache, disc, built, commit, self._jobs, t0,
                          str(self.root))

    def _validated(self, disc: Discovery) -> None:
        """Record ``disc`` as what this version's content was last proven against.

        Validation bookkeeping only (the files and records of the version never
        change); each field is replaced whole, so a concurrent ``refresh``
        compares with either the old or the new snapshot, both true.
        """
        self._stats = {e.path: e.stat_key for e in disc.files}
        self._racy = frozenset(e.path for e in disc.files if e.racy(disc.scanned_ns))

    def _unchanged(self, hit: RenderResult) -> bool:
        """Whether every file ``hit`` shows text of (or priced at a text level) has the stat it was indexed with."""
        stats, racy = self._stats, self._racy
        for f in hit.files:
            if max(f.level, f.requested_level) < 2:
                continue
            if f.path in racy:  # changed too recently for its stat to prove its content
                return False
            try:
                st = os.stat(fs_path(self.root, f.path))
            except OSError:
                return False
            if stats.get(f.path) != (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino):
                return False
        return True

    def _forget_vanished(self) -> None:
        """Every file is there as indexed: read failures noticed earlier were transient."""
        with self._lock:
            self._vanished = {}

    def _same_tree(self, disc: Discovery) -> bool:
        if disc.skipped_paths != self._disc_skips or len(disc.files) != len(self._stats):
            return False
        stats = self._stats
        if any(stats.get(e.path) != e.stat_key for e in disc.files):
            return False
        if not self._racy:
            return True
        # a racy file's stat proves nothing: compare its content with what was indexed
        keys = self._built.all_keys
        for rel in sorted(self._racy):
            try:
                data = read_regular(fs_path(self.root, rel))
            except OSError:
                return False
            if not keys.get(rel, "").startswith(content_hash(data) + ":"):
                return False
        self._validated(disc)  # files that aged out of the racy window need no re-hash next time
        return True

    def vanished(self) -> dict[str, str]:
        """Files of this version noticed gone, unreadable or binary when read: ``path -> reason``."""
        with self._lock:
            return dict(sorted(self._vanished.items()))

    def _noticed(self, gone: dict[str, str]) -> None:
        if gone:
            with self._lock:
                self._vanished.update(gone)

    # ---- lazily built, request-independent state ---------------------------------
    def _structure(self) -> RankStructure:
        with self._lock:
            if self._rs is None:
                self._rs = self._load_structure()
            return self._rs

    def _load_structure(self) -> RankStructure:
        key = hashlib.blake2b(
            (STRUCTURE_FORMAT + self._built.index_hash + self.config.rank.model_dump_json()).encode(),
            digest_size=16).hexdigest()
        built = self._built
        feed, fed, order = built.feed, built.fed, built.feed_order
        built.feed, built.fed, built.feed_order = None, set(), []
        mapped = self._cache.map_structure(key)
        if mapped is not None:
            try:
                rs = RankStructure.from_buffer(mapped)
                if rs.paths == self.files:
                    return rs
            except ValueError as exc:  # a torn write or another layout: build it again
                log.warning("repo-map structure %s unusable (%s); rebuilding", key, exc)
        if feed is None:
            rs = RankStructure.build(self.files, self._stream_bags(), self.config.rank)
        else:
            # bags fed as the index workers returned them (rows: positions in the discovery);
            # the files not indexed now (cached content, duplicates) are read from the cache
            pos = {p: i for i, p in enumerate(self.files)}
            feed.renumber_rows(np.asarray([pos.get(p, -1) for p in order], dtype=np.int32))
            del pos, order
            files = self.files
            for row, bag in self._stream_bags(fed):
                feed.add(row, files[row], bag)
            rs = feed.finish(self.files, self.config.rank)
        self._cache.put_structure(key, rs.to_buffers())
        return rs

    def _stream_bags(self, skip: set[str] | None = None) -> Iterator[tuple[int, tuple]]:
        """``(row, bag)`` for every file (but ``skip``), read in chunks so all bags are never in memory.

        A cached bag stands for every file with its bytes (the structure adds the terms of
        each file's own path).
        """
        keys = self._built.keys
        files = self.files
        rows = range(len(files)) if not skip else [i for i, p in enumerate(files) if p not in skip]
        for lo in range(0, len(rows), _BAG_CHUNK):
            part = [files[i] for i in rows[lo:lo + _BAG_CHUNK]]
            bags = self._cache.get_column("bag", sorted({keys[p] for p in part}))
            for row, p in zip(rows[lo:lo + _BAG_CHUNK], part):
                bag = bags.get(keys[p])
                if bag is not None:
                    yield row, bag

    def _base_line_costs(self) -> np.ndarray:
        """Cost of each file's path line without a why (for ``RankedFile.level_tokens``)."""
        return self._built.line_costs

    # ---- requests -----------------------------------------------------------------
    def rank(self, plan: FlightPlan) -> list[RankedFile]:
        """Every file ranked for ``plan``: score desc, then path."""
        ctx = self._request(plan)
        if ctx.ranked is not None:
            return list(ctx.ranked)
        base = self._base_line_costs()
        out = []
        for i in ctx.order:
            p = self.files[i]
            c2, c3, c4 = self._built.records[p][6]
            line = int(base[i])
            sig = {k: round(float(v[i]), 6) for k, v in ctx.signals.items() if v[i] > 0}
            low = (0, line, line + c2, line + c3)
            levels = ((*low, line + c4) if c4 >= 0
                      else LevelTokens(low, functools.partial(self._full_cost, p, line)))
            out.append(RankedFile(p, float(ctx.score[i]), sig, bool(ctx.focused[i]), levels))
        ctx.ranked = tuple(out)  # the next rank of this plan (a turn's several) is a copy of the list
        return out

    def _full_cost(self, path: str, line: int) -> int:
        """Level-4 cost of ``path`` (path line ``line`` + its text, counted now if the index has
        only a bound); the bound when the file cannot be read now."""
        c4, _ = self._price_full([path])[path]
        return line + (c4 if c4 is not None else full_bounds(self._built.records[path])[0])

    def _price_full(self, paths: list[str]) -> dict[str, tuple[int | None, str]]:
        """Exact level-4 costs of indexed ``paths`` (``(cost, "")``, or ``(None, reason)`` when a
        file is unreadable now), for records that hold only a bound of it.

        Read from the cache when a render counted that content before; else counted from the
        file as it is now, and stored for its key only when its bytes are still the ones the
        key names (a file edited since the index is counted, not stored). Kept in the records.
        """
        records, keys = self._built.records, self._built.keys
        i_costs = REC["costs"]
        need = sorted({keys[p] for p in paths if records[p][i_costs][2] < 0})
        stored = self._cache.get_full_costs(need) if need else {}
        out: dict[str, tuple[int | None, str]] = {}
        new: list[tuple[str, int]] = []
        for p in paths:
            rec = records[p]
            c2, c3, c4 = rec[i_costs]
            if c4 < 0:
                got = stored.get(keys[p])
                if got is None:
                    data, reason = read_current(resolve_inside(self.root, p), self.config.discover.binary_sniff_bytes)
                    if data is None:
                        out[p] = (None, reason)
                        continue
                    got = full_cost(data)
                    if content_hash(data) == keys[p].split(":", 1)[0]:
                        new.append((keys[p], got))
                c4 = got
                records[p] = (*rec[:i_costs], (c2, c3, c4), *rec[i_costs + 1:])
            out[p] = (c4, "")
        self._cache.put_full_costs(new)
        return out

    def render(self, plan: FlightPlan, include_timings: bool = False) -> RenderResult:
        """Render ``plan``; the text never exceeds ``plan.token_budget`` (exact counter).

        ``include_timings`` puts the open and rank times into the header (then the
        same input no longer gives the same bytes); they are always in
        ``metadata.timings_ms``.

        The same plan rendered again on this version is answered from a small memo (a
        navigator turn prices its choice at the whole budget, then renders that same plan:
        two seconds each on a 20,000-file tree), unless a file whose text it shows or priced
        has changed on disk since this version indexed it (then it is rendered again, as it is
        now); racy or vanished files are never memoised.
        """
        t_in = time.perf_counter()
        dump = getattr(plan, "model_dump_json", None)  # the fast CLI's plain DefaultPlan renders once: no memo
        key = None if include_timings or dump is None else dump()
        if key is not None and (hit := self._renders.get(key)) is not None and self._unchanged(hit):
            return _fresh_copy(hit, time.perf_counter() - t_in)
        inp, result, ctx, t0, t1 = self._render(plan, include_timings)
        t2 = time.perf_counter()
        files = summaries(inp, result, ctx.order)
        timings = {"rank": round((t1 - t0) * 1e3, 2), "fit_render": round((t2 - t1) * 1e3, 2),
                   "open": round(self.open_ms, 2)}
        meta = metadata(inp, result, plan.token_budget, files, timings, self.skipped_files)
        out = RenderResult(text=result.text, metadata=meta, files=files)
        if key is not None and not result.skipped:
            self._renders.put(key, out)
            return _fresh_copy(out, None)
        return out

    def render_text(self, plan: FlightPlan, include_timings: bool = False) -> str:
        """``render(plan, include_timings).text``, without building the metadata and file summaries.

        The same text (same fitting, same exact count); what ``repo-map generate``
        prints. Skips the pydantic models ``render`` returns (one per shown file).
        """
        return self._render(plan, include_timings)[1].text

    def _render(self, plan: FlightPlan, include_timings: bool) -> tuple[RenderInput, Any, Any, float, float]:
        t0 = time.perf_counter()
        ctx = self._request(plan)
        t1 = time.perf_counter()
        head_t = ({"open": round(self.open_ms, 1), "rank": round((t1 - t0) * 1e3, 1)}
                  if include_timings else None)
        inp = RenderInput(root=self.root, paths=self.files, records=self._built.records,
                          score=ctx.score, focused=ctx.focused, why=ctx.why(plan, self.config.render.why_max),
                          expand=ctx.expand, index_version=self.index_version, cfg=self.config.render,
                          line_base=self._base_line_costs(), header_timings=head_t,
                          binary_sniff_bytes=self.config.discover.binary_sniff_bytes, price=self._price_full)
        result = render_plan(inp, plan)
        self._noticed(result.skipped)
        return inp, result, ctx, t0, t1

    def read_lines(self, path: str, start: int, end: int) -> str:
        """Lines ``start..end`` (1-based, inclusive) of a file inside the root, as it is now.

        An indexed file that has vanished, become unreadable or turned binary
        since this version was built reads as empty (and is listed by
        :meth:`vanished`); any other path that is not a file is refused.
        """
        target = resolve_inside(self.root, path)
        if path in self._built.records:
            data, reason = read_current(target, self.config.discover.binary_sniff_bytes)
            if data is None:
                self._noticed({path: reason})
                return ""
        elif not target.is_file():
            raise PathEscapeError(f"{path!r} is not a file in the repository; pass a path from the map")
        else:
            data = read_regular(target)
        lines = data.decode("utf-8", "replace").splitlines()
        lo, hi = max(1, int(start)), min(len(lines), int(end))
        return "\n".join(lines[lo - 1:hi]) + ("\n" if hi >= lo else "")

    def stats(self) -> dict[str, object]:
        """Index statistics: counts by language, skips by reason, symbols, timings."""
        langs: dict[str, int] = {}
        n_sym = non_utf8 = parse_errors = 0
        self._built.records.prefetch(self.files)
        for rec in self._built.records.values():
            key = rec[1] or "other"
            langs[key] = langs.get(key, 0) + 1
            n_sym += len(rec[7])
            non_utf8 += bool(rec[4])
            parse_errors += bool(rec[5])
        return {"root": str(self.root), "index_version": self.index_version, "files": len(self.files),
                "symbols": n_sym, "languages": dict(sorted(langs.items())), "skipped": self.skipped,
                "non_utf8_decoded_with_replacement": non_utf8, "parse_errors": parse_errors,
                "parsed_this_open": self._built.parsed, "open_ms": round(self.open_ms, 1),
                "build_ms": {k: round(v, 1) for k, v in self._built.timings_ms.items()}}


def _fresh_copy(hit: RenderResult, seconds: float | None) -> RenderResult:
    """A copy of a memoised render its caller may change; ``seconds``: this answer's own time (a memo hit)."""
    meta = hit.metadata.model_copy(deep=True)
    if seconds is not None:
        meta.timings_ms = {**meta.timings_ms, "rank": 0.0, "fit_render": round(seconds * 1e3, 2), "memo": 1.0}
    return replace(hit, metadata=meta, files=[f.model_copy(deep=True) for f in hit.files])
