"""Budget fitting: degrade the lowest value-per-token content first, focused content last.

Each file has a ladder of allowed levels with a token cost and a value at each.
Starting from the requested levels, the fitter repeatedly takes the cheapest
loss per saved token (``(tier, loss / saved, file index)`` in a heap, so ties
are deterministic) until the running total fits the target. It keeps its state,
so the renderer can ask for more savings after an exact re-count.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

__all__ = ["FileCosts", "Fitter"]


@dataclass(slots=True)
class FileCosts:
    """Per-file ladder: ``cost[l]`` / ``value[l]`` for allowed levels (``None`` = not allowed)."""

    cost: list[int | None]
    value: list[float]
    #: degraded in tier order: 0 = ordinary content, 1 = focused, 2 = a level an explicit rule
    #: asked for, 3 = both (each tier only after every lower one)
    tier: int
    requested: int


class Fitter:
    """Stateful greedy degrader over many files."""

    def __init__(self, files: list[FileCosts]) -> None:
        self.files = files
        self.levels = [f.requested if f.cost[f.requested] is not None else 0 for f in files]
        self.total = sum(f.cost[lv] or 0 for f, lv in zip(files, self.levels))
        self._heap: list[tuple[int, float, int, int, int]] = []
        for i in range(len(files)):
            self._push(i)

    def _best_step(self, i: int) -> tuple[float, int] | None:
        """Cheapest degradation of file ``i``: (loss per saved token, target level).

        Every lower level is considered, not only the next one: a step that saves
        almost nothing (level 3 -> 2 of a file without docstrings) must not hide
        the large saving behind it (2 -> 1 of a long outline).
        """
        f, lv = self.files[i], self.levels[i]
        costs, values = f.cost, f.value
        here = costs[lv] or 0
        v_here = values[lv]
        best: tuple[float, int] | None = None
        for lower in range(lv - 1, -1, -1):
            c = costs[lower]
            if c is None or c >= here:
                continue
            loss = v_here - values[lower]
            if loss < 0.0:  # max(loss, 0.0), without the call (this loop runs per file per step)
                loss = 0.0
            ratio = loss / (here - c)
            if best is None or ratio < best[0]:
                best = (ratio, lower)
        return best

    def _push(self, i: int) -> None:
        step = self._best_step(i)
        if step is not None:
            heapq.heappush(self._heap, (self.files[i].tier, step[0], i, self.levels[i], step[1]))

    def reprice(self, measured: dict[int, int]) -> None:
        """Replace the cost of files' *current* level by a measured cost (exact re-count)."""
        for i, cost in measured.items():
            f, lv = self.files[i], self.levels[i]
            old = f.cost[lv] or 0
            if cost != old:
                f.cost[lv] = cost
                self.total += cost - old
                self._push(i)

    def drop(self, i: int) -> None:
        """Hide file ``i`` for good (it can no longer be shown, e.g. it vanished)."""
        f = self.files[i]
        self.total -= f.cost[self.levels[i]] or 0
        f.cost = [0, None, None, None, None]
        f.requested = 0
        self.levels[i] = 0  # its heap entries are stale now and skipped by fit()

    def refill(self, target: int, candidates: int = 256) -> None:
        """Raise degraded files back into the room a fit left (``target - total``).

        Greedy degradation takes the cheapest loss per saved token, and that step can be a
        jump to a much lower level (L4 -> L0 of a file whose L3 is nearly as costly as its
        L4), leaving room the next level up would have filled. One pass over the degraded
        files, most valuable requested level first (``candidates`` at most, so a
        20,000-file map stays cheap): each rises to the highest allowed level that fits.
        """
        room = target - self.total
        if room <= 0:
            return
        files, levels = self.files, self.levels
        degraded = [i for i, lv in enumerate(levels) if lv < files[i].requested]
        degraded.sort(key=lambda i: (files[i].tier, files[i].value[files[i].requested]), reverse=True)
        for i in degraded[:candidates]:
            f, lv = files[i], levels[i]
            here = f.cost[lv] or 0
            for up in range(f.requested, lv, -1):
                c = f.cost[up]
                if c is not None and c - here <= room:
                    room -= c - here
                    self.total += c - here
                    levels[i] = up
                    self._push(i)
                    break
            if room <= 0:
                break

    def fit(self, target: int) -> bool:
        """Degrade until ``total <= target``; False when even everything hidden is over."""
        while self.total > target and self._heap:
            _tier, _ratio, i, lv, lower = heapq.heappop(self._heap)
            if self.levels[i] != lv:
                continue  # stale entry
            f = self.files[i]
            self.total -= (f.cost[lv] or 0) - (f.cost[lower] or 0)
            self.levels[i] = lower
            self._push(i)
        return self.total <= target
