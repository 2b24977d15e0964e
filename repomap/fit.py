"""Budget fitting: degrade the lowest value-per-token content first, focused content last.

Each file has a ladder of allowed levels with a token cost and a value at each.
Starting from the requested levels, the fitter repeatedly takes the cheapest
loss per saved token (``(tier, loss / saved, file index)`` in a heap, so ties
are deterministic) until the running total fits the target. It keeps its state,
so the renderer can ask for more savings after an exact re-count.

A file's full-level (L4) cost may be unknown when fitting starts (``index.full_bounds``:
only a lower and an upper bound). :func:`must_price` names the files whose exact cost
could change what :meth:`Fitter.fit` does; every other one may hold any value between its
bounds (the renderer puts the lower bound) and the fit is the same, step for step where
it matters. :meth:`Fitter.refill` prices a file when it considers raising it to L4.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["FileCosts", "Fitter", "must_price"]

_FULL = 4


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

    def __init__(self, files: list[FileCosts], unpriced: dict[int, int] | None = None,
                 price: Callable[[int], int | None] | None = None) -> None:
        """``unpriced``: files whose L4 cost is a placeholder -> a lower bound of it;
        ``price(i)`` returns the exact L4 cost (None: the file cannot be shown any more)."""
        self.files = files
        self._unpriced = dict(unpriced or {})
        self._price = price
        self.levels = [f.requested if f.cost[f.requested] is not None else 0 for f in files]
        self.total = sum(f.cost[lv] or 0 for f, lv in zip(files, self.levels))
        self._heap: list[tuple[int, float, int, int, int]] = []
        for i in range(len(files)):
            self._push(i)

    def _best_step(self, i: int) -> tuple[float, int] | None:
        """Cheapest degradation of file ``i``: (loss per saved token, target level)."""
        f, lv = self.files[i], self.levels[i]
        return _step(f.cost, f.value, lv, f.cost[lv] or 0)

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
                if c is not None and up == _FULL and i in self._unpriced:
                    if self._unpriced[i] - here > room:
                        continue  # even its lower bound does not fit: no need for the number
                    c = self._priced(i)
                    if c is None:  # it cannot be shown any more: hidden (drop() freed ``here``)
                        room += here
                        break
                if c is not None and c - here <= room:
                    room -= c - here
                    self.total += c - here
                    levels[i] = up
                    self._push(i)
                    break
            if room <= 0:
                break

    def _priced(self, i: int) -> int | None:
        """File ``i``'s exact L4 cost, now set on its ladder; None when it was dropped instead."""
        del self._unpriced[i]
        c = self._price(i) if self._price is not None else None
        if c is None:
            self.drop(i)
            return None
        self.files[i].cost[_FULL] = c
        return c

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


def _step(costs: list[int | None], values: list[float], lv: int, here: int) -> tuple[float, int] | None:
    """Cheapest degradation from level ``lv`` costing ``here``: (loss per saved token, target level).

    Every lower level is considered, not only the next one: a step that saves
    almost nothing (level 3 -> 2 of a file without docstrings) must not hide
    the large saving behind it (2 -> 1 of a long outline).
    """
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


_Key = tuple[int, float, int]
_NEVER: tuple[float] = (float("inf"),)  # after every key (a tier is an int)


def _chain(f: FileCosts, lv: int, i: int) -> list[tuple[_Key, int, int]]:
    """The degradation steps of file ``i`` from level ``lv`` down to where none is left:
    ``(heap key, cost after, level after)`` each (what ``Fitter`` pops for it, in order)."""
    out = []
    costs, values = f.cost, f.value
    while True:
        step = _step(costs, values, lv, costs[lv] or 0)
        if step is None:
            return out
        lv = step[1]
        out.append(((f.tier, step[0], i), costs[lv] or 0, lv))


def _exits(costs: list[int | None], values: list[float], lo: int, hi: int) -> list[int]:
    """The levels a file can leave L4 for when its L4 cost is an integer in ``[lo, hi]``.

    ``_step`` picks the level of least ``loss_l / (cost - c_l)``; two such ratios, as real
    functions of the cost, are equal at one cost at most (``cross``), so the choice changes only
    there. It is evaluated at ``lo``, ``hi`` and the integers next to every crossing inside:
    each stretch between crossings holds one of those points. Rounding can flip a comparison
    only where the two ratios are within a few units in the last place, i.e. within a tiny
    fraction of a token of the crossing while the losses differ by more than a millionth; when
    they do not (or a loss is 0, or a level becomes allowed inside the range), every allowed
    level is returned.
    """
    levels = [l for l in range(_FULL) if costs[l] is not None and costs[l] < hi]  # noqa: E741
    if any(costs[l] >= lo for l in levels):  # type: ignore[operator]
        return levels
    loss = [values[_FULL] - values[l] for l in levels]
    if min(loss) <= 0.0:
        return levels
    cost = [costs[l] for l in levels]
    at = [[a / (c - cl) for a, cl in zip(loss, cost)] for c in (lo, hi)]  # type: ignore[operator]
    # the common case: one level is clearly cheapest at both ends, so it is cheaper than each
    # other one at both ends, no pair with it crosses in between, and it wins everywhere
    ends = []
    for r in at:
        order = sorted(range(len(r)), key=r.__getitem__)
        if len(order) > 1 and not r[order[0]] < r[order[1]] * (1.0 - 1e-9):
            break
        ends.append(order[0])
    else:
        if ends[0] == ends[1]:
            return [levels[ends[0]]]
    probes = {lo, hi}
    n = len(levels)
    for j in range(n):
        for k in range(j + 1, n):
            a_j, a_k = loss[j], loss[k]
            if abs(a_j - a_k) <= 1e-6 * max(a_j, a_k):
                return levels
            if all(min(r[j], r[k]) < max(r[j], r[k]) * (1.0 - 1e-9) for r in at) and \
                    (at[0][j] < at[0][k]) == (at[1][j] < at[1][k]):
                continue  # the same one clearly cheaper at both ends: no crossing in between
            cross = (a_j * cost[k] - a_k * cost[j]) / (a_j - a_k)  # type: ignore[operator]
            if lo - 2 <= cross <= hi + 2:
                base = int(cross)
                probes.update(c for c in range(base - 2, base + 4) if lo <= c <= hi)
    out = set()
    for c in probes:
        step = _step(costs, values, _FULL, c)
        if step is not None:
            out.add(step[1])
    return sorted(out)


def must_price(files: list[FileCosts], bounds: dict[int, tuple[int, int]], target: int) -> set[int]:
    """The files of ``bounds`` whose exact L4 cost can change what ``Fitter(files).fit(target)`` does.

    ``bounds``: file -> ``(lo, hi)`` of its L4 cost, for files requested at L4 whose
    ``cost[4]`` is only known to lie in that range (``cost[4]`` holds any value in it).

    Why the others cannot: the fitter pops each file's steps in the order of their heap keys
    ``(tier, ratio, file)``, a step becoming available when the file's previous one is taken,
    so the steps are taken in the order of their *effective* key (the largest key of the
    file's steps up to it), and it stops after the first step that brings the total within
    ``target``, at key ``K*``. Let ``T(K)`` be the total after every step of effective key
    ``<= K``. Below, ``T_low(K) <= T(K)`` for every L4 cost the bounds allow, so the first key
    ``K_lo`` where ``T_low`` reaches ``target`` is ``<= K*`` whatever the costs are. A file
    leaves L4 with key ``<= khi`` (its ratio with the cost at ``lo``: ratios fall as the cost
    grows), to some level ``d`` below ``hi`` (one of :func:`_exits`). If ``khi < K_lo`` and every such ``d`` leads,
    through the steps of keys below ``K_lo`` (which do not depend on the L4 cost), to the same
    level, then at ``K_lo`` the file is at that level whatever its L4 cost, it takes the same
    steps after it, ``T(K)`` is the same for ``K >= K_lo``, and so is ``K*`` and the outcome.
    ``T_low`` counts a file of ``bounds`` as ``lo`` until the smallest key it can leave L4 with
    (its ratio at ``hi``), and after that as the cheapest level any of its ``d`` can have
    reached by then (over every level below ``hi``: a looser bound, cheaper than ``_exits``
    for every file).
    """
    if not bounds:
        return set()
    info: dict[int, tuple[_Key, list[list[tuple[_Key, int, int]]]]] = {}
    events: list[tuple[_Key, int]] = []
    total = 0
    for i, f in enumerate(files):
        b = bounds.get(i)
        if b is None:
            lv = f.requested if f.cost[f.requested] is not None else 0
            total += f.cost[lv] or 0
            here, top = f.cost[lv] or 0, None
            for key, after, _lv in _chain(f, lv, i):
                top = key if top is None or key > top else top
                events.append((top, after - here))
                here = after
            continue
        lo, hi = b
        costs, values = f.cost, f.value
        low, high = _step(costs, values, _FULL, hi), _step(costs, values, _FULL, lo)
        if low is None or high is None:
            continue  # no step below it (not reached: level 0 costs 0 < lo); priced by the caller
        klo, khi = (f.tier, low[0], i), (f.tier, high[0], i)
        # every level it is allowed to leave L4 for, each with its steps (effective keys from
        # klo on); the ones it can actually pick (``_exits``) are sorted out only for a file
        # whose allowed levels lead to different places
        paths = []
        for d in range(_FULL):
            if costs[d] is None or costs[d] >= hi:
                continue
            top, seq = klo, [(klo, costs[d] or 0, d)]
            for key, after, lv in _chain(f, d, i):
                top = key if key > top else top
                seq.append((top, after, lv))
            paths.append(seq)
        info[i] = (khi, paths, b)
        total += lo
        # the cheapest of the paths at each key: every path starts at klo and only gets cheaper
        here = lo
        for key, _j, c in sorted([(k, j, c) for j, seq in enumerate(paths) for k, c, _lv in seq]):
            if c < here:
                events.append((key, c - here))
                here = c
    k_lo: tuple = _NEVER
    if total <= target:
        return set(bounds)  # nothing is degraded at all
    events.sort(key=lambda e: e[0])
    for key, delta in events:
        total += delta
        if total <= target:
            k_lo = key
            break
    out = set(bounds) - set(info)
    for i, (khi, paths, (lo, hi)) in info.items():
        if not khi < k_lo:
            out.add(i)
        elif len(_ends(paths, k_lo)) > 1:
            exits = _exits(files[i].cost, files[i].value, lo, hi)
            if len(_ends([seq for seq in paths if seq[0][2] in exits], k_lo)) > 1:
                out.add(i)
    return out


def _ends(paths: list[list[tuple[_Key, int, int]]], k_lo: tuple) -> set[int]:
    """The levels the paths are at after their steps of keys below ``k_lo``."""
    ends = set()
    for seq in paths:
        lv = seq[0][2]
        for key, _c, after in seq[1:]:
            if not key < k_lo:
                break
            lv = after
        ends.add(lv)
    return ends
