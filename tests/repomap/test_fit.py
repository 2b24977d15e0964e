"""The budget fitter: degrade by loss per saved token, then refill the room a jump left."""

from __future__ import annotations

from durable_navigator.repomap.fit import FileCosts, Fitter


def _file(costs: list[int | None], value: float, tier: int = 0) -> FileCosts:
    level_value = (0.0, 0.3, 1.5, 2.0, 3.5)
    return FileCosts(cost=list(costs), value=[value * v for v in level_value], tier=tier, requested=4)


def test_a_jump_to_a_low_level_is_refilled_up_to_the_level_that_fits() -> None:
    # L3 is nearly as costly as L4: the cheapest loss per saved token is L4 -> L1,
    # which leaves 135 of 145 tokens unused although L3 (143) fits
    fitter = Fitter([_file([0, 10, 120, 143, 150], 1.0)])
    fitter.fit(145)
    assert fitter.levels == [1]
    fitter.refill(145)
    assert fitter.levels == [3] and fitter.total == 143


def test_refill_raises_the_most_valuable_file_first_and_never_past_the_target() -> None:
    strong, weak = _file([0, 5, 40, 60, 100], 1.0), _file([0, 5, 40, 60, 100], 0.1)
    fitter = Fitter([weak, strong])
    fitter.fit(70)
    fitter.refill(70)
    assert fitter.total <= 70
    assert fitter.levels[1] >= fitter.levels[0]  # the stronger file got the room first
    # a level an explicit rule asked for (tier 2) is refilled before an auto level
    ruled = Fitter([_file([0, 5, 40, 60, 100], 1.0), _file([0, 5, 40, 60, 100], 0.5, tier=2)])
    ruled.levels, ruled.total = [0, 0], 0
    ruled.refill(60)
    assert ruled.levels == [0, 3]
