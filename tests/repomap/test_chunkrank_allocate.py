"""The budget allocator: full / signature / out by expected gold lines per token."""

from __future__ import annotations

import numpy as np

from durable_navigator.repomap.chunkrank import FULL, OUT, SIGNATURE, allocate


def _alloc(fv: list[float], fc: list[int], sv: list[float], sc: list[int], budget: int) -> list[int]:
    return allocate(np.array(fv), np.array(fc), np.array(sv), np.array(sc), budget).tolist()


def test_a_long_chunk_with_little_value_gives_way_to_three_dense_short_ones() -> None:
    # chunk 0: likeliest overall but 900 tokens for 0.3; chunks 1-3: 0.2 each for 100 tokens
    got = _alloc([0.3, 0.2, 0.2, 0.2], [900, 100, 100, 100], [0.0] * 4, [20] * 4, budget=600)
    assert got == [OUT, FULL, FULL, FULL]


def test_a_chunk_that_does_not_fit_shows_its_signature_when_that_is_worth_it() -> None:
    got = _alloc([0.5, 0.1], [900, 80], [0.2, 0.0], [20, 15], budget=300)
    assert got == [SIGNATURE, FULL]


def test_the_choice_never_exceeds_the_budget_and_takes_nothing_worthless() -> None:
    rng = np.random.default_rng(3)
    fv, fc = rng.random(200), rng.integers(20, 800, 200)
    sv, sc = fv * rng.random(200) * 0.3, rng.integers(10, 30, 200)
    fv[:10] = 0.0
    sv[:10] = 0.0
    for budget in (0, 50, 1000, 8000, 10**6):
        lv = allocate(fv, fc, sv, sc, budget)
        used = np.where(lv == FULL, fc, np.where(lv == SIGNATURE, sc, 0)).sum()
        assert used <= budget
        assert (lv[:10] == OUT).all()
    assert (allocate(fv, fc, sv, sc, 10**6)[10:] == FULL).all()  # room for everything: all in full


def test_full_is_reached_through_the_signature_only_when_that_step_is_denser() -> None:
    # signature density 0.01/20 is below the full chunk's 0.5/100: it goes straight to full
    assert _alloc([0.5], [100], [0.01], [20], budget=100) == [FULL]
    assert _alloc([0.5], [100], [0.01], [20], budget=50) == [SIGNATURE]


def test_cost_power_zero_fills_in_value_order_and_one_by_density() -> None:
    fv, fc = [0.3, 0.2, 0.2, 0.2], [500, 100, 100, 100]
    assert _alloc_p(fv, fc, 600, 0.0) == [FULL, FULL, OUT, OUT]
    assert _alloc_p(fv, fc, 600, 1.0) == [OUT, FULL, FULL, FULL]


def _alloc_p(fv: list[float], fc: list[int], budget: int, power: float) -> list[int]:
    n = len(fv)
    return allocate(np.array(fv), np.array(fc), np.zeros(n), np.full(n, 10), budget, cost_power=power).tolist()
