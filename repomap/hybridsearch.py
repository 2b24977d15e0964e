"""Hybrid search: the keyword hits and the learned chunk ranker's best chunks, fused (issue 28).

``symsearch.search_symbols`` ranks definitions by keywords (file BM25 prior, chunk
BM25, name bonuses). The learned ranker (``chunkrank``, ranker-v2: LightGBM over
lexical, structural, size, goal-form and git-history features, trained on the
corpus' train split only) ranks the repository's chunks for the same text. The two
lists are fused by reciprocal rank: a hit's score is ``sum(w / (k + rank))`` over the
lists that hold it (rank from 1; ``SearchConfig.ranker_weight`` weighs the ranker's list,
which is the better one on dev), so a definition both lists like comes first and
one that only the ranker finds (a goal that names no identifier of its body) still
enters the top ten. Reciprocal rank needs no calibration between BM25 scores and
LightGBM margins, which live on unrelated scales. A keyword hit inside one of the
ranker's chunks (a method of the class it ranks first) shares that chunk's credit.

A ranker chunk that is a whole definition becomes that definition's hit; any other
chunk (a class body between its methods, a window of a long function, a run of
module-level code) becomes a hit on its lines, ``symbol`` = ``path::a-b`` (the focus
symbol the map expands as those lines) and ``kind`` = ``lines``.

Deterministic (the ranker runs on one thread; ties break by path and line) and
offline. A repository whose chunks the ranker cannot use (nothing indexed with a term
of the query) gets the keyword hits unchanged; a query no keyword matches has no hits.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from durable_navigator.repomap.config import SearchConfig
from durable_navigator.repomap.types import SearchHit

__all__ = ["ranker_hits", "fuse", "hybrid_search"]

_Key = tuple[str, int | None, int | None]


def ranker_hits(engine: Any, query: str, limit: int, history: bool) -> list[SearchHit]:
    """The ranker's best ``limit`` chunks for ``query`` as hits, best first (ties: path, line).

    A run of module-level code (lines outside every definition) has ``why`` = ``module``.
    """
    from durable_navigator.repomap.chunkrank.features import chunk_features
    from durable_navigator.repomap.chunkrank.fromengine import engine_view, repo_chunks, repo_history
    from durable_navigator.repomap.chunkrank.model import ranker_for

    rc = repo_chunks(engine)
    if not rc.spans:
        return []
    hist = repo_history(engine.root) if history else None
    ranker = ranker_for(hist)
    cf = chunk_features(rc, query, engine_view(engine, query), hist, **ranker.reads())
    if not cf.spans:
        return []
    scores = ranker.score(cf.X)
    order = sorted(range(len(cf.spans)), key=lambda i: (-float(scores[i]), cf.spans[i].path, cf.spans[i].start))
    out: list[SearchHit] = []
    syms: dict[str, list[Any]] = {}
    for i in order[:limit]:
        span = cf.spans[i]
        if span.path not in syms:
            syms[span.path] = engine.symbols(span.path)
        whole = next((s for s in syms[span.path] if (s.start_line, s.end_line, s.name) == (span.start, span.end, span.name)),
                     None) if span.name else None
        score = round(float(scores[i]), 6)
        if whole is not None:
            out.append(SearchHit(span.path, score, whole.id, span.start, span.end, whole.kind))
            continue
        inside = any(s.start_line <= span.start and span.end <= s.end_line for s in syms[span.path])
        out.append(SearchHit(span.path, score, f"{span.path}::{span.start}-{span.end}", span.start, span.end,
                             "lines", None if inside else "module"))
    return out


def _key(h: SearchHit) -> _Key:
    return (h.path, h.line, h.end_line)


def fuse(keyword: list[SearchHit], ranked: list[SearchHit], limit: int, cfg: SearchConfig) -> list[SearchHit]:
    """Reciprocal-rank fusion of two hit lists, at most ``cfg.max_per_file`` per file; best first.

    A hit in both lists keeps the keyword list's form (its symbol id and kind); ``why``
    says which list ranked it where (``keyword #2 + ranker #1``).
    """
    score: dict[_Key, float] = {}
    hit: dict[_Key, SearchHit] = {}
    why: dict[_Key, list[str]] = {}
    for name, hits, weight in (("keyword", keyword, cfg.keyword_weight), ("ranker", ranked, cfg.ranker_weight)):
        for r, h in enumerate(hits, 1):
            k = _key(h)
            module = (h.path, None, None)
            if name == "ranker" and h.why == "module" and module in hit and hit[module].line is None:
                # the keyword search's hit on a file's module code, now with the ranker's lines
                k, hit[module] = module, h
            score[k] = score.get(k, 0.0) + weight / (cfg.rrf_k + r)
            hit.setdefault(k, h)
            why.setdefault(k, []).append(f"{name} #{r}")
    _credit_inside(keyword, ranked, score, why, cfg)
    order = sorted(score, key=lambda k: (-score[k], k[0], k[1] or 0, k[2] or 0))
    per_file: dict[str, int] = {}
    out: list[SearchHit] = []
    for k in order:
        if per_file.get(k[0], 0) >= cfg.max_per_file:
            continue
        per_file[k[0]] = per_file.get(k[0], 0) + 1
        out.append(replace(hit[k], score=round(score[k], 6), why=" + ".join(why[k])))
        if len(out) >= limit:
            break
    return out


def _credit_inside(keyword: list[SearchHit], ranked: list[SearchHit], score: dict[_Key, float],
                   why: dict[_Key, list[str]], cfg: SearchConfig) -> None:
    """A keyword hit inside a ranker chunk (a method of the class the ranker likes) also gets the
    chunk's share: the ranker names the region, the keywords the definition in it. Only the
    best such chunk counts, and only for a hit the ranker did not list itself."""
    for h in keyword:
        k = _key(h)
        if h.line is None or h.end_line is None or any(w.startswith("ranker") for w in why[k]):
            continue
        for r, c in enumerate(ranked, 1):
            if (c.path == h.path and c.line is not None and c.end_line is not None
                    and c.line <= h.line and h.end_line <= c.end_line):
                score[k] += cfg.ranker_weight / (cfg.rrf_k + r)
                why[k].append(f"inside ranker #{r}")
                break


def hybrid_search(engine: Any, query: str, limit: int, keyword: list[SearchHit],
                  cfg: SearchConfig) -> list[SearchHit]:
    """``keyword`` (the keyword search's hits, ``cfg.fuse_depth`` of them) fused with the ranker's."""
    if not keyword:
        return []  # no word of the query occurs: the ranker would only re-list the central files
    ranked = ranker_hits(engine, query, cfg.fuse_depth, cfg.history)
    return fuse(keyword, ranked, limit, cfg)
