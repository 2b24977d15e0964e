"""The methods an evaluation compares the navigator with: the engine alone, and chunk BM25.

* **engine alone** -- the repo map the engine renders for the goal at the budget, no model
  (what ``repo-map generate REPO --goal G --budget B`` prints);
* **chunk BM25** -- function/class-level chunks of every file the engine indexes
  (``repomap/chunkrank/chunks.py``: the unit the learned ranker ranks, the benchmark's chunker),
  ranked by Okapi BM25 (Lucene idf, k1 1.5, b 0.75; ``repomap/chunkrank/lexical.py``, the package's
  own implementation: no extra dependency), each rendered as ``### path:a-b`` plus its lines in a
  fence and added in rank order while it fits the budget (exact counter); chunks scoring 0 never.

:func:`pack` and :class:`Doc` are also the benchmark's (``bench/quality_baselines.py``), so both
render the same blocks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from durable_navigator.navtypes.flightplan import FlightPlan
from durable_navigator.repomap.chunkrank.chunks import tokenize
from durable_navigator.repomap.chunkrank.fromengine import repo_chunks
from durable_navigator.repomap.chunkrank.lexical import bm25_scores

__all__ = ["Doc", "pack", "engine_alone", "chunk_bm25_ranked", "chunk_bm25"]

#: below this many tokens left, no block fits (a header alone costs more): stop looking
_MIN_LEFT = 16


@dataclass(frozen=True)
class Doc:
    """A retrievable unit: lines ``start..end`` (1-based, inclusive) of ``path``."""

    path: str
    start: int
    end: int

    def render(self, lines: list[str]) -> str:
        """The block a baseline context shows for this unit."""
        body = "\n".join(lines[self.start - 1:self.end])
        return f"### {self.path}:{self.start}-{self.end}\n```\n{body}\n```\n"


def pack(ranked: list[tuple[Doc, float]], budget: int, source: Callable[[str], list[str]],
         count: Callable[[str], int], costs: dict[Doc, int] | None = None) -> str:
    """Blocks in rank order while they fit ``budget`` (exact count of the joined text).

    ``costs`` memoises each block's count across budgets of the same task.
    """
    costs = {} if costs is None else costs
    parts: list[str] = []
    used = 0
    for doc, _score in ranked:
        block = doc.render(source(doc.path))
        if doc not in costs:
            costs[doc] = count(block)
        cost = costs[doc]
        if used + cost <= budget:
            parts.append(block)
            used += cost
        if budget - used < _MIN_LEFT:
            break
    text = "".join(parts)
    while parts and count(text) > budget:  # BPE merges across blocks can add a token or two
        parts.pop()
        text = "".join(parts)
    return text


def engine_alone(engine: Any, goal: str, budget: int) -> str:
    """The engine's map for ``goal`` at ``budget`` tokens (``engine``: an open ``repomap.RepoMap``)."""
    return str(engine.render_text(FlightPlan(goal=goal, token_budget=budget)))


def chunk_bm25_ranked(engine: Any, goal: str) -> list[tuple[Doc, float]]:
    """Every chunk with a positive BM25 score for ``goal``, best first (ties: path, then line)."""
    rc = repo_chunks(engine)
    scores = bm25_scores(rc.tf, rc.columns(tokenize(goal)))
    order = sorted((int(i) for i in np.flatnonzero(scores > 0)),
                   key=lambda i: (-scores[i], rc.spans[i].path, rc.spans[i].start))
    return [(Doc(rc.spans[i].path, rc.spans[i].start, rc.spans[i].end), float(scores[i])) for i in order]


def chunk_bm25(engine: Any, goal: str, budget: int, source: Callable[[str], list[str]],
               count: Callable[[str], int]) -> str:
    """The chunk BM25 context for ``goal`` at ``budget`` tokens."""
    return pack(chunk_bm25_ranked(engine, goal), budget, source, count)
