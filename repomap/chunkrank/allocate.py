"""The budget allocator: per chunk full text, signature line or nothing, by expected gold lines per token.

A multiple-choice knapsack solved greedily: each chunk offers two upgrades --
out -> signature (value ``sig_value``, cost ``sig_cost``) and signature -> full
(the rest of ``full_value`` for the rest of ``full_cost``), or out -> full directly
when that is denser than going through the signature (the upper convex hull of
the chunk's three options). Upgrades are taken in order of value per token while
they fit; a chunk's second upgrade only after its first; a full chunk that no longer
fits falls back to its signature. A long function with one
likely line costs many tokens for little value and waits behind the next three
short ones, or shows as its signature.
"""

from __future__ import annotations

import heapq

import numpy as np

__all__ = ["OUT", "SIGNATURE", "FULL", "allocate"]

OUT, SIGNATURE, FULL = 0, 1, 2


def _steps(fv: float, fc: float, sv: float, sc: float) -> list[tuple[float, float, int]]:
    """The chunk's upgrade steps ``(value, cost, level reached)`` along its convex hull."""
    if sc <= 0 or sc >= fc or sv <= 0 or sv / sc <= fv / fc or fv <= sv:
        return [(fv, fc, FULL)] if fv > 0 else []
    return [(sv, sc, SIGNATURE), (fv - sv, fc - sc, FULL)]


def allocate(full_value: np.ndarray, full_cost: np.ndarray, sig_value: np.ndarray, sig_cost: np.ndarray,
             budget: int, cost_power: float = 1.0) -> np.ndarray:
    """Level per chunk (``OUT`` / ``SIGNATURE`` / ``FULL``) maximising expected value within ``budget``
    (greedy by value per token; costs are additive). Ties go to the earlier chunk.

    ``cost_power`` orders upgrades by ``value / cost ** cost_power``: 1 is the knapsack's
    density, 0 pure value order (the ranker's order, filled while it fits); values
    estimated with noise are better spent somewhere between (the shipped model names
    the power chosen on dev).
    """
    n = len(full_value)
    level = np.full(n, OUT, dtype=np.int8)
    steps = [_steps(float(full_value[i]), float(full_cost[i]), float(sig_value[i]), float(sig_cost[i]))
             for i in range(n)]
    def key(v: float, c: float) -> float:
        return -v / max(c, 1e-9) ** cost_power

    heap = [(key(v, c), i, 0) for i in range(n) for (v, c, _lvl) in steps[i][:1]]
    heapq.heapify(heap)
    left = float(budget)
    while heap:
        _d, i, k = heapq.heappop(heap)
        v, c, lvl = steps[i][k]
        if c > left:
            # a full chunk that does not fit may still show its signature (when that was not on
            # the chunk's hull, it was never offered on its own)
            if lvl == FULL and k == 0 and level[i] == OUT and 0 < sig_cost[i] < c and sig_value[i] > 0:
                steps[i] = [(float(sig_value[i]), float(sig_cost[i]), SIGNATURE)]
                heapq.heappush(heap, (key(float(sig_value[i]), float(sig_cost[i])), i, 0))
            continue  # skipped: a later, smaller upgrade may still fit
        left -= c
        level[i] = lvl
        if k + 1 < len(steps[i]):
            v2, c2, _ = steps[i][k + 1]
            heapq.heappush(heap, (key(v2, c2), i, k + 1))
    return level
