"""Symbol-level search: the definitions that match a query, each with its line range.

Two stages, both cheap on a warm engine:

1. **files** — the whole-file BM25 matrix of the ranking structure (built once per
   index version) scores every file; the best ``candidate_files`` are kept, plus
   the files that define an identifier the query names exactly;
2. **definitions** — each candidate file is cut into *chunks*: every function,
   method and class owns the lines of its span that no nested definition owns (a
   class keeps its header, docstring and fields; its methods are chunks of their
   own), and the lines outside any definition form the module chunk. Chunks are
   scored with BM25 (idf from the file-level document frequencies), plus a bonus
   when a query term is part of the definition's name, plus the file's own score
   as a prior, plus a bonus for a definition whose name the query spells exactly.

Stopwords of the query (``repomap/stopwords.py``, the engine's one list: "why",
"does", "the") are dropped first: in a question about code they match nothing
useful and, as symbol names (``why``, ``the``), they used to crowd out every real
hit. Chunk term bags are kept per engine
version (``ChunkCache``), so repeated searches read no file twice.
"""

from __future__ import annotations

import math
import re
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from durable_navigator.repomap.config import SearchConfig
from durable_navigator.repomap.index import REC, SYM, split_identifier
from durable_navigator.repomap.rank import RankStructure, goal_mentions, goal_terms
from durable_navigator.repomap.stopwords import is_stopword
from durable_navigator.repomap.types import SearchHit

__all__ = ["ChunkCache", "search_symbols", "query_terms"]

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: chunk kinds that are never search results on their own: a field is part of its class, a
#: module constant part of the module (a one-line chunk would win on length alone)
_OWNED_BY_PARENT = frozenset({"field", "constant"})


@dataclass(frozen=True, slots=True)
class Chunk:
    """Lines of one file owned by one definition (``sym`` = its index) or by the module (``sym`` = -1)."""

    sym: int
    terms: dict[str, int]
    length: int


class ChunkCache:
    """Per engine version: file path -> its chunks (bounded; thread-safe enough for dict use)."""

    def __init__(self, max_files: int = 4096) -> None:
        self._chunks: dict[str, list[Chunk]] = {}
        self._max = max_files
        self._lock = threading.Lock()

    def get(self, path: str, build: Callable[[], list[Chunk]]) -> list[Chunk]:
        """The chunks of ``path``, built once."""
        got = self._chunks.get(path)
        if got is None:
            got = build()
            with self._lock:
                if len(self._chunks) >= self._max:
                    self._chunks.clear()
                self._chunks[path] = got
        return got


def query_terms(query: str, min_len: int) -> list[str]:
    """The query's code-aware terms without stopwords (``repomap.stopwords``), first occurrence order.

    A one-word query keeps its word even when it is a stopword: ``get`` alone is a request.
    """
    words = re.findall(r"[A-Za-z_][A-Za-z0-9_]*", query)
    kept = [w for w in words if not is_stopword(w.lower())] or (words if len(words) == 1 else [])
    return list(dict.fromkeys(t for t in goal_terms(" ".join(kept), min_len)
                              if not is_stopword(t) or len(words) == 1))


def _exact_names(query: str) -> set[str]:
    """Identifiers the query spells like code: ``BudgetLedger``, ``url_path_for``, ``Ledger.record``."""
    idents, _, _ = goal_mentions(query)
    out = set(idents)
    for dotted in re.findall(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+", query):
        out.update(p for p in dotted.split(".") if len(p) > 2 and (not p.islower() or "_" in p))
        out.add(dotted.rsplit(".", 1)[-1])
    return {n for n in out if len(n) > 2}


def build_chunks(text: str, symbols: tuple) -> list[Chunk]:
    """Cut one file's text into definition chunks (each line to its innermost definition)."""
    lines = text.splitlines()
    owner = [-1] * (len(lines) + 1)
    width = [1 << 30] * (len(lines) + 1)
    for k, s in enumerate(symbols):
        if s[SYM["kind"]] in _OWNED_BY_PARENT:
            continue
        lo, hi = max(1, s[SYM["start"]]), min(len(lines), s[SYM["end"]])
        w = hi - lo
        for ln in range(lo, hi + 1):
            if w <= width[ln]:
                owner[ln], width[ln] = k, w
    bags: dict[int, Counter[str]] = {}
    for ln, line in enumerate(lines, 1):
        bag = bags.setdefault(owner[ln], Counter())
        for ident in _IDENT.findall(line):
            bag.update(split_identifier(ident))
    return [Chunk(k, dict(bag), sum(bag.values())) for k, bag in sorted(bags.items())]


def search_symbols(query: str, limit: int, rs: RankStructure, files: list[str], records: dict[str, tuple],
                   read: Callable[[str], str], cache: ChunkCache, cfg: SearchConfig, min_len: int,
                   definers: Callable[[str], list[tuple[str, int]]]) -> list[SearchHit]:
    """The best ``limit`` definitions (or module chunks) for ``query``; best first, ties by path and line."""
    terms = query_terms(query, min_len)
    cols = {t: c for t in terms if (c := rs.term_col(t)) is not None}
    exact = _exact_names(query)
    n = len(files)
    file_score = np.zeros(n)
    idf: dict[str, float] = {}
    if cols:
        # scipy's ``bm25[:, cols].sum(axis=1)``, same rounding (``sparse.Compressed``)
        file_score = rs.bm25.columns_row_sum(sorted(cols.values())).astype(np.float64)
        df = np.diff(rs.bm25.indptr)
        idf = {t: math.log(1.0 + (n - df[c] + 0.5) / (df[c] + 0.5)) for t, c in cols.items()}
    index = {p: i for i, p in enumerate(files)}
    exact_defs = {(p, k) for name in sorted(exact) for p, k in definers(name)}
    want = max(cfg.candidate_files, limit * cfg.candidate_factor)
    order = np.lexsort((np.arange(n), -file_score))
    cand = [files[i] for i in order[:want] if file_score[i] > 0]
    cand += sorted({p for p, _ in exact_defs} - set(cand))
    if not cand:
        return []
    top_file = float(file_score.max()) or 1.0
    mean_idf = sum(idf.values()) / len(idf) if idf else 1.0
    chunks = {p: cache.get(p, lambda p=p: build_chunks(read(p), records[p][REC["symbols"]])) for p in cand}
    lengths = [c.length for cs in chunks.values() for c in cs]
    avg = max(sum(lengths) / max(len(lengths), 1), 1.0)
    scored: list[tuple[float, str, int, int]] = []
    for p in cand:
        syms = records[p][REC["symbols"]]
        prior = cfg.file_weight * mean_idf * float(file_score[index[p]]) / top_file
        for c in chunks[p]:
            s = _bm25(c, idf, avg, cfg)
            if c.sym >= 0:
                sym = syms[c.sym]
                parts = set(split_identifier(sym[SYM["name"]]))
                s += cfg.name_weight * sum(v for t, v in idf.items() if t in parts)
                if (p, c.sym) in exact_defs:
                    s += cfg.exact_name_bonus * max(mean_idf, 1.0)
            if s <= 0 and (p, c.sym) not in exact_defs:
                continue
            line = syms[c.sym][SYM["start"]] if c.sym >= 0 else 0
            scored.append((s + prior, p, line, c.sym))
    scored.sort(key=lambda x: (-x[0], x[1], x[2]))
    return _pick(scored, limit, records, cfg.max_per_file)


def _bm25(chunk: Chunk, idf: dict[str, float], avg: float, cfg: SearchConfig) -> float:
    norm = cfg.bm25_k1 * (1.0 - cfg.bm25_b + cfg.bm25_b * chunk.length / avg)
    total = 0.0
    for t, w in idf.items():
        tf = chunk.terms.get(t, 0)
        if tf:
            total += w * tf * (cfg.bm25_k1 + 1.0) / (tf + norm)
    return total


def _pick(scored: list[tuple[float, str, int, int]], limit: int, records: dict[str, tuple],
          max_per_file: int) -> list[SearchHit]:
    per_file: Counter[str] = Counter()
    out: list[SearchHit] = []
    for score, p, _line, k in scored:
        if per_file[p] >= max_per_file:
            continue
        per_file[p] += 1
        if k < 0:
            out.append(SearchHit(p, round(score, 6)))
        else:
            s = records[p][REC["symbols"]][k]
            out.append(SearchHit(p, round(score, 6), f"{p}::{s[SYM['qual']]}", s[SYM["start"]],
                                 s[SYM["end"]], s[SYM["kind"]]))
        if len(out) >= limit:
            break
    return out
