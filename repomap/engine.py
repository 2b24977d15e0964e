"""``RepoMap``: the engine facade (open once, render many times).

Opening discovers and indexes the repository (through the persistent cache);
the ranking structure is loaded or built lazily on the first request and kept,
so a render with another flight plan or goal never re-parses anything.
Thread-safe for concurrent renders (lazy state is built under a lock).
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from durable_navigator.navcore.errors import PathEscapeError, RepoError
from durable_navigator.navcore.flightplan import FlightPlan
from durable_navigator.repomap.build import BuiltIndex, build_index
from durable_navigator.repomap.cache import IndexCache, default_cache_dir
from durable_navigator.repomap.config import EngineConfig
from durable_navigator.repomap.discover import check_root, discover, git_commit
from durable_navigator.repomap.engine_query import QueryMixin
from durable_navigator.repomap.layout import file_line
from durable_navigator.repomap.rank import RankStructure
from durable_navigator.repomap.render import RenderInput, metadata, render_plan, summaries
from durable_navigator.repomap.safepath import resolve_inside
from durable_navigator.repomap.tokens import count_many
from durable_navigator.repomap.types import RankedFile, RenderResult

__all__ = ["RepoMap"]

log = logging.getLogger("repomap")

#: bags loaded per sqlite query while building the ranking structure
_BAG_CHUNK = 512


class RepoMap(QueryMixin):
    """An indexed repository: ``render`` / ``rank`` / ``search`` / symbol queries."""

    def __init__(self, root: Path, config: EngineConfig, cache: IndexCache, built: BuiltIndex,
                 skipped: dict[str, int], commit: str | None, open_ms: float) -> None:
        self.root = root
        self.config = config
        self._cache = cache
        self._built = built
        self.files: list[str] = sorted(built.records)
        self.skipped = dict(sorted(skipped.items()))
        self.index_version = (f"git:{commit}+" if commit else "") + f"idx:{built.index_hash[:16]}"
        self.open_ms = open_ms
        self._lock = threading.Lock()
        self._rs: RankStructure | None = None
        self._line_costs: np.ndarray | None = None
        self._sym_index: dict[str, list[tuple[str, int]]] | None = None

    @classmethod
    def open(cls, root: str | Path, config: EngineConfig | None = None, cache_dir: Path | None = None,
             jobs: int | None = None) -> "RepoMap":
        """Discover and index ``root`` (cached); RepoError when it is not a usable directory."""
        t0 = time.perf_counter()
        cfg = config or EngineConfig()
        real = check_root(Path(root))
        cache = IndexCache(Path(cache_dir) if cache_dir is not None else default_cache_dir())
        if _is_inside(real, cache.dir.resolve()):
            raise RepoError(f"cache dir {cache.dir} is inside the repository; choose a cache dir outside it")
        disc = discover(real, cfg.discover)
        built = build_index(disc, cache, cfg, jobs)
        skipped = dict(disc.skipped)
        for k, v in built.skipped.items():
            skipped[k] = skipped.get(k, 0) + v
        if not built.records:
            raise RepoError(f"repository {str(root)!r} has no indexable files "
                            f"(skipped: {skipped or 'none'}); point at a repository with source files")
        ms = (time.perf_counter() - t0) * 1e3
        log.debug("repo-map opened %s: %d files, %d parsed, %.0f ms", real, len(built.records), built.parsed, ms)
        return cls(real, cfg, cache, built, skipped, git_commit(real), ms)

    # ---- lazily built, request-independent state ---------------------------------
    def _structure(self) -> RankStructure:
        with self._lock:
            if self._rs is None:
                self._rs = self._load_structure()
            return self._rs

    def _load_structure(self) -> RankStructure:
        key = hashlib.blake2b(
            (self._built.index_hash + self.config.rank.model_dump_json()).encode(), digest_size=16).hexdigest()
        blob = self._cache.get_named("structures", key)
        if blob is not None:
            return RankStructure.from_blob(blob)
        rs = RankStructure.build(self.files, self._stream_bags(), self.config.rank)
        self._cache.put_named("structures", key, rs.to_blob())
        return rs

    def _stream_bags(self) -> Iterator[tuple[int, tuple]]:
        """``(row, bag)`` for every file, read in chunks so all bags are never in memory."""
        keys = self._built.keys
        for lo in range(0, len(self.files), _BAG_CHUNK):
            part = self.files[lo:lo + _BAG_CHUNK]
            bags = self._cache.get_column("bag", sorted({keys[p] for p in part}))
            for row, p in enumerate(part, lo):
                if keys[p] in bags:
                    yield row, bags[keys[p]]

    def _base_line_costs(self) -> np.ndarray:
        """Cost of each file's path line without a why (for ``RankedFile.level_tokens``)."""
        with self._lock:
            if self._line_costs is None:
                recs = self._built.records
                self._line_costs = np.asarray(count_many(
                    [file_line(p, 1, recs[p][2], recs[p][3], []) for p in self.files]), dtype=np.int64)
            return self._line_costs

    # ---- requests -----------------------------------------------------------------
    def rank(self, plan: FlightPlan) -> list[RankedFile]:
        """Every file ranked for ``plan``: score desc, then path."""
        ctx = self._request(plan)
        base = self._base_line_costs()
        out = []
        for i in ctx.order:
            p = self.files[i]
            c2, c3, c4 = self._built.records[p][6]
            line = int(base[i])
            sig = {k: round(float(v[i]), 6) for k, v in ctx.signals.items() if v[i] > 0}
            out.append(RankedFile(p, float(ctx.score[i]), sig, bool(ctx.focused[i]),
                                  (0, line, line + c2, line + c3, line + c4)))
        return out

    def render(self, plan: FlightPlan, include_timings: bool = False) -> RenderResult:
        """Render ``plan``; the text never exceeds ``plan.token_budget`` (exact counter).

        ``include_timings`` puts the open and rank times into the header (then the
        same input no longer gives the same bytes); they are always in
        ``metadata.timings_ms``.
        """
        t0 = time.perf_counter()
        ctx = self._request(plan)
        t1 = time.perf_counter()
        head_t = ({"open": round(self.open_ms, 1), "rank": round((t1 - t0) * 1e3, 1)}
                  if include_timings else None)
        inp = RenderInput(root=self.root, paths=self.files, records=self._built.records,
                          score=ctx.score, focused=ctx.focused, why=ctx.why(plan, self.config.render.why_max),
                          expand=ctx.expand, index_version=self.index_version, cfg=self.config.render,
                          line_base=self._base_line_costs(), header_timings=head_t)
        result = render_plan(inp, plan)
        t2 = time.perf_counter()
        files = summaries(inp, result, ctx.order)
        timings = {"rank": round((t1 - t0) * 1e3, 2), "fit_render": round((t2 - t1) * 1e3, 2),
                   "open": round(self.open_ms, 2)}
        return RenderResult(text=result.text, metadata=metadata(inp, result, plan.token_budget, files, timings),
                            files=files)

    def read_lines(self, path: str, start: int, end: int) -> str:
        """Lines ``start..end`` (1-based, inclusive) of a file inside the root."""
        target = resolve_inside(self.root, path)
        if not target.is_file():
            raise PathEscapeError(f"{path!r} is not a file in the repository; pass a path from the map")
        lines = target.read_bytes().decode("utf-8", "replace").splitlines()
        lo, hi = max(1, int(start)), min(len(lines), int(end))
        return "\n".join(lines[lo - 1:hi]) + ("\n" if hi >= lo else "")

    def stats(self) -> dict[str, object]:
        """Index statistics: counts by language, skips by reason, symbols, timings."""
        langs: dict[str, int] = {}
        n_sym = non_utf8 = parse_errors = 0
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


def _is_inside(root: Path, path: Path) -> bool:
    return path == root or root in path.parents
