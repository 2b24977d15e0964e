"""Per-request personalization and the symbol / search queries of ``RepoMap``.

Kept apart from ``engine.py`` so each module stays small: this mixin turns a
flight plan into signal vectors and answers ``search``, ``symbols``,
``find_symbol``, ``callers`` and ``callees`` from the loaded index.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

import numpy as np

from durable_navigator.navtypes.errors import PathEscapeError
from durable_navigator.repomap.globs import plan_match
from durable_navigator.repomap.index import REC, SYM
from durable_navigator.repomap.rank import (
    Personalization,
    goal_mentions,
    goal_terms,
    name_hits,
    name_index,
    personalized_rank,
)
from durable_navigator.repomap.render import MODULE, Expansion, FocusPricer, module_ranges
from durable_navigator.repomap.safepath import resolve_inside
from durable_navigator.repomap.symsearch import ChunkCache, search_symbols
from durable_navigator.repomap.types import SearchHit, Symbol, SymbolRef

if TYPE_CHECKING:
    from durable_navigator.navtypes.flightplan import FlightPlan
    from durable_navigator.repomap.xref import References  # jedi and the site scanners: on the first callers/callees
    from durable_navigator.repomap.rank import RankStructure

__all__ = ["LastUsed", "QueryMixin", "RequestContext"]

K = TypeVar("K")
V = TypeVar("V")

#: a "why" mentions pagerank only when the file is at least this central (normalized)
_WHY_PAGERANK_MIN = 0.2
#: a focus symbol naming lines of a file: ``path::start-end`` (a qualified name never starts with a digit)
_LINE_RANGE = re.compile(r"(?P<path>.+)::(?P<a>[1-9][0-9]{0,8})-(?P<b>[1-9][0-9]{0,8})")


def _expansion_order(k: Expansion) -> tuple[int, int, int]:
    """File order of a file's expansions: ``MODULE`` first, then symbols (by index), then line ranges."""
    return (1, k, 0) if isinstance(k, int) else (2, *k)


class LastUsed(Generic[K, V]):
    """The ``size`` values used last, by key, thread-safe (activities share an engine)."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._items: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            got = self._items.get(key)
            if got is not None:
                self._items.move_to_end(key)
            return got

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self._size:
                self._items.popitem(last=False)


@dataclass
class RequestContext:
    """One request's ranking: scores, signals and what to expand."""

    score: np.ndarray
    signals: dict[str, np.ndarray]
    focused: np.ndarray
    order: list[int]
    expand: dict[str, list[Expansion]]
    top_term: list[str | None] = field(default_factory=list)
    ident_of: dict[int, str] = field(default_factory=dict)
    #: ``RepoMap.rank``'s files for this request, once built (frozen ``RankedFile`` s)
    ranked: tuple[Any, ...] | None = None

    def why(self, plan: FlightPlan, limit: int) -> list[list[str]]:
        """Per file: its strongest signals as short labels, e.g. ``bm25:budget``."""
        n = len(self.score)
        if not plan.show_why or limit <= 0:
            return [[] for _ in range(n)]
        sig = self.signals
        hits = [sig[k] > 0 for k in ("focus", "trace", "path", "ident")]
        bm25, pagerank = sig["bm25"], sig["pagerank"]
        # only files with some signal get labels; the rest (most of a large tree) get []
        todo = np.flatnonzero(np.logical_or.reduce([*hits, bm25 > 0, pagerank >= _WHY_PAGERANK_MIN])).tolist()
        focus, trace, path, ident = (h.tolist() for h in hits)
        bm25_l, pagerank_l = bm25.tolist(), pagerank.tolist()  # the same values as Python floats
        out: list[list[str]] = [[] for _ in range(n)]
        for i in todo:
            cand = []
            if focus[i]:
                cand.append((3.0, "focus"))
            if trace[i]:
                cand.append((2.5, "trace"))
            if path[i]:
                cand.append((2.0, "path"))
            if ident[i]:
                cand.append((1.5, f"ident:{self.ident_of.get(i, '?')}"))
            if bm25_l[i] > 0 and self.top_term and self.top_term[i]:
                cand.append((bm25_l[i], f"bm25:{self.top_term[i]}"))
            if pagerank_l[i] >= _WHY_PAGERANK_MIN:
                cand.append((pagerank_l[i] * 0.5, "pagerank"))
            cand.sort(key=lambda c: (-c[0], c[1]))
            out[i] = [label for _, label in cand[:limit]]
        return out


class QueryMixin:
    """Queries over the loaded index (mixed into ``RepoMap``)."""

    files: list[str]
    root: Any
    config: Any
    _built: Any
    _chunks: ChunkCache
    _rankings: LastUsed[tuple, RequestContext]
    _xref: References | None

    def _structure(self) -> "RankStructure":  # provided by RepoMap
        raise NotImplementedError

    # ---- personalization ------------------------------------------------------------
    def _request(self, plan: FlightPlan) -> RequestContext:
        """The ranking of every file for ``plan`` (its goal and focus; nothing else of a plan moves it).

        One exploration ranks the same plan several times (the policy prices a render, the
        render activity draws it, the pack fits it); on a 20,000-file tree each ranking is a
        personalized PageRank of half a second. The last few are kept on this version (the
        index, and so the ranking structure, never changes under one ``RepoMap``). Callers read a
        context and never change it: its arrays are read-only, and ``RepoMap.rank`` hands each
        caller a list of its own (``RepoMap._rankings``: on a 20,000-file tree about 15 MB each once
        ranked, 2 MB of arrays, the rest the files' records).
        """
        key = (plan.goal or "", tuple((fp.glob, fp.weight) for fp in plan.focus_paths),
               tuple((fs.symbol, fs.weight, fs.expand) for fs in plan.focus_symbols))
        got = self._rankings.get(key)
        if got is None:
            got = self._rank_request(plan)
            for arr in (got.score, got.focused, *got.signals.values()):
                arr.setflags(write=False)
            self._rankings.put(key, got)
        return got

    def _rank_request(self, plan: FlightPlan) -> RequestContext:
        rs = self._structure()
        cfg = self.config.rank
        n = len(self.files)
        goal = plan.goal or ""
        terms = goal_terms(goal, cfg.min_term_len)
        cols = sorted({c for c in map(rs.term_col, terms) if c is not None})
        lexical = np.zeros(n)
        top_term: list[str | None] = [None] * n
        if cols:
            sub = rs.bm25.columns_dense(cols)
            lexical = sub.sum(axis=1).astype(np.float64)
            best = sub.argmax(axis=1).tolist()
            names = [rs.terms[c] for c in cols]
            top_term = [names[b] if hit else None for hit, b in zip((lexical > 0).tolist(), best)]
        idents, paths, traces = goal_mentions(goal)
        ident = np.zeros(n)
        ident_of: dict[int, str] = {}
        for name in sorted(set(idents)):
            j = rs.ident_col(name)
            if j is None:
                continue
            rows = rs.defs.column_rows(j)
            if 0 < len(rows) <= cfg.max_def_files:
                ident[rows] = 1.0
                for r in rows:
                    ident_of.setdefault(int(r), name)
        focus, expand = self._focus(plan)
        pers = Personalization(lexical=lexical, ident=ident, path=self._path_hits(paths),
                               trace=self._path_hits(traces), focus=focus,
                               name=name_hits(self._name_index(), terms, n) if cfg.name_weight else None)
        out = personalized_rank(rs, pers, cfg)
        order = np.lexsort((np.arange(n), -out.score)).tolist()
        return RequestContext(out.score, out.signals, focus > 0, order, expand, top_term, ident_of)

    def _name_index(self) -> dict[str, list[int]]:
        """The words naming each file, built once per file list (a refresh brings a new list)."""
        cached = self.__dict__.get("_names")
        if cached is None or cached[0] is not self.files:
            cached = self._names = (self.files, name_index(self.files))
        return cached[1]

    def _path_hits(self, mentions: list[str]) -> np.ndarray:
        v = np.zeros(len(self.files))
        for m in sorted(set(mentions)):
            if not m:
                continue
            for i, p in enumerate(self.files):
                # "pkg/x.py" names "src/pkg/x.py"; "/abs/Lib/x.py" (a trace) names "x.py"
                if p == m or p.endswith("/" + m) or m.endswith("/" + p):
                    v[i] = 1.0
        return v

    def _focus(self, plan: FlightPlan) -> tuple[np.ndarray, dict[str, list[int]]]:
        cfg = self.config.rank
        focus = np.zeros(len(self.files))
        index = {p: i for i, p in enumerate(self.files)} if plan.focus_symbols else {}
        files = frozenset(self.files) if plan.focus_paths else frozenset()
        for fp in plan.focus_paths:
            for i, p in enumerate(self.files):
                if plan_match(fp.glob, p, files):
                    focus[i] += cfg.focus_path_weight * fp.weight
        expand: dict[str, list[Expansion]] = {}
        for fs in plan.focus_symbols:
            for path, k in self._module_or_symbol(fs.symbol):
                focus[index[path]] += cfg.focus_symbol_weight * fs.weight
                if fs.expand and k not in expand.setdefault(path, []):
                    expand[path].append(k)
        return focus, {p: sorted(ks, key=_expansion_order) for p, ks in sorted(expand.items()) if ks}

    # ---- symbols --------------------------------------------------------------------
    def _symbol_defs(self, ref: str) -> list[tuple[str, int]]:
        """(path, symbol index) of every symbol whose name or qualified name is ``ref``.

        In path order, then source order. Candidates are the files the ranking
        structure lists as defining a name ``ref`` ends with (a qualified name is
        ``Outer.name``), so only their symbols are read, not the whole index's.
        """
        rs = self._structure()
        parts = ref.split(".")
        rows: set[int] = set()
        for i in range(len(parts)):
            j = rs.ident_col(".".join(parts[i:]))
            if j is not None:
                rows.update(rs.defs.column_rows(j).tolist())
        records = self._built.records
        paths = [self.files[r] for r in sorted(rows)]
        records.prefetch(paths)
        out: list[tuple[str, int]] = []
        for p in paths:
            for k, s in enumerate(records[p][REC["symbols"]]):
                if s[SYM["name"]] == ref or s[SYM["qual"]] == ref:
                    out.append((p, k))
        return out

    def _module_or_symbol(self, ref: str) -> list[tuple[str, Expansion]]:
        """Like :meth:`_resolve_symbol`; ``path::`` is the module-level code of a file with symbols and
        ``path::a-b`` its lines ``a..b`` (clipped to the file; nothing when they are not in it)."""
        if ref.endswith("::"):
            rec = self._built.records.get(ref[:-2])
            return [(ref[:-2], MODULE)] if rec is not None and rec[REC["symbols"]] else []
        got = _LINE_RANGE.fullmatch(ref)
        if got is not None:
            rec = self._built.records.get(got["path"])
            a, b = int(got["a"]), int(got["b"])
            if rec is None or not rec[REC["symbols"]] or a > b or a > rec[REC["lines"]]:
                return []
            return [(got["path"], (a, min(b, rec[REC["lines"]])))]
        return self._resolve_symbol(ref)

    def _resolve_symbol(self, ref: str) -> list[tuple[str, int]]:
        """``path::Qual`` or a bare (qualified) name -> (path, symbol index) pairs."""
        if "::" in ref:
            path, qual = ref.split("::", 1)
            rec = self._built.records.get(path)
            if rec is None:
                return []
            return [(path, k) for k, s in enumerate(rec[REC["symbols"]]) if s[SYM["qual"]] == qual]
        return self._symbol_defs(ref)

    def _symbol(self, path: str, k: int) -> Symbol:
        s = self._built.records[path][REC["symbols"]][k]
        return Symbol(id=f"{path}::{s[SYM['qual']]}", name=s[SYM["name"]], kind=s[SYM["kind"]], path=path,
                      start_line=s[SYM["start"]], end_line=s[SYM["end"]], signature=s[SYM["sig"]],
                      doc=s[SYM["doc"]] or None)

    def symbols(self, path: str) -> list[Symbol]:
        """Symbols of one indexed file in source order (empty for unsupported languages)."""
        if path not in self._built.records:
            resolve_inside(self.root, path)  # escapes raise PathEscapeError
            raise PathEscapeError(f"{path!r} is not an indexed file; pass a path listed in RepoMap.files")
        return [self._symbol(path, k) for k in range(len(self._built.records[path][REC["symbols"]]))]

    def module_ranges(self, path: str) -> list[tuple[int, int]]:
        """Line runs of ``path`` no definition spans (its module-level code; focus symbol ``path::``).

        Empty for a file without symbols (it has no outline to show them in).
        """
        syms = self._built.records[path][REC["symbols"]] if path in self._built.records else ()
        if not syms:
            return []
        return module_ranges(syms, self._built.records[path][REC["lines"]])

    def focus_pricer(self, path: str) -> Callable[[list[str], bool], int]:
        """Exact tokens the map spends on focus symbols (ids, ``path::``, ``path::a-b``) of ``path``:
        ``cost(refs, outlined)`` is what they add to its path line at level 1 (the expansions and
        the definitions enclosing them) or, ``outlined``, to its level-2 outline (the expansions).
        What the renderer's fitter charges, so a caller choosing expansions by their cost prices
        them as the map will; the file is read and counted once per pricer (0 for refs not of
        ``path``, or when it cannot be read now)."""
        pricer = FocusPricer(self.root, self._built.records, path, self.config.discover.binary_sniff_bytes)

        def cost(refs: list[str], outlined: bool = False) -> int:
            ks: list[Expansion] = []
            for ref in refs:
                ks.extend(k for p, k in self._module_or_symbol(ref) if p == path and k not in ks)
            ks.sort(key=_expansion_order)
            return pricer.expanded(ks) if outlined else pricer.focused(ks)

        return cost

    def terms_in(self, terms: list[str], paths: list[str] | None = None) -> set[str]:
        """Which of ``terms`` (lower-case words / identifier parts) occur in the files of ``paths``.

        ``paths`` may name files or folders (everything below them); ``None`` means
        the whole repository.
        """
        rs = self._structure()
        if paths is None:
            rows = None
        else:
            wanted = [p.rstrip("/") for p in paths]
            rows = [i for i, f in enumerate(rs.paths) if any(f == w or f.startswith(w + "/") for w in wanted)]
            if not rows:
                return set()
        found: set[str] = set()
        for term in terms:
            col = rs.term_col(term.lower())
            if col is None:
                continue
            if rows is None or not set(rs.bm25.column_rows(col).tolist()).isdisjoint(rows):
                found.add(term)
        return found

    def find_symbol(self, name: str) -> list[Symbol]:
        """Definitions whose name, qualified name or id equals ``name`` (sorted by id)."""
        return sorted((self._symbol(p, k) for p, k in self._resolve_symbol(name)), key=lambda s: (s.id, s.start_line))

    def search(self, query: str, limit: int = 20, mode: Literal["keyword", "hybrid"] | None = None) -> list[SearchHit]:
        """Definitions or line ranges that match ``query``, best first.

        ``mode`` (default: ``config.search.mode``): ``hybrid`` fuses the keyword hits
        (``symsearch.py``) with the learned chunk ranker's (``hybridsearch.py``);
        ``keyword`` returns the keyword hits alone. A query no keyword matches has no hits
        in either mode.
        """
        cfg = self.config.search
        mode = mode or cfg.mode
        depth = max(limit, cfg.fuse_depth) if mode == "hybrid" else limit
        hits = search_symbols(query, depth, self._structure(), self.files, self._built.records,
                              lambda p: self.read_lines(p, 1, 1 << 62),  # type: ignore[attr-defined]
                              self._chunks, cfg, self.config.rank.min_term_len,
                              lambda name: self._resolve_symbol(name))
        if mode == "keyword" or not hits:
            return hits
        from durable_navigator.repomap.hybridsearch import hybrid_search  # lightgbm: loaded on first use

        return hybrid_search(self, query, limit, hits, cfg)  # type: ignore[arg-type]

    # ---- reference graph --------------------------------------------------------------
    def _references(self) -> References:
        with self._lock:  # type: ignore[attr-defined]
            if self._xref is None:
                from durable_navigator.repomap.xref import References

                self._xref = References(
                    Path(self.root), self.files, self._built.records, self._files_naming,
                    lambda p: self.read_lines(p, 1, 1 << 62),  # type: ignore[attr-defined]
                    self._resolve_symbol, self.config.xref,
                    self._cache.dir / "xref",  # type: ignore[attr-defined]
                    self._built.index_hash[:16])
            return self._xref

    def _files_naming(self, name: str) -> list[str]:
        """Files whose identifiers include ``name`` (the reference matrix of the ranking structure)."""
        rs = self._structure()
        j = rs.ident_col(name)
        return [] if j is None else [self.files[i] for i in rs.refs.column_rows(j).tolist()]

    def callers(self, symbol_id: str) -> list[SymbolRef]:
        """Code sites that reference a definition, resolved through imports and scopes (``xref.py``).

        ``symbol_id`` is ``path::Qual`` or a bare (qualified) name (its first
        definition). Resolved callers come first; sites whose name could mean
        several definitions follow with ``resolved=False``. Never a README, a
        docstring, a comment or a string.
        """
        found = self._resolve_symbol(symbol_id)
        return self._references().callers(*found[0]) if found else []

    def callees(self, symbol_id: str) -> list[SymbolRef]:
        """Definitions a definition's body references, resolved (``symbol_id`` = the callee, its first line)."""
        found = self._resolve_symbol(symbol_id)
        return self._references().callees(*found[0]) if found else []
