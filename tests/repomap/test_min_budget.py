"""``MIN_TOKEN_BUDGET`` is the engine's real floor: the header-only map fits in it, one token less does not."""

from __future__ import annotations

from pathlib import Path

import pytest

from durable_navigator.navtypes.errors import FlightPlanError
from durable_navigator.navtypes.flightplan import MIN_TOKEN_BUDGET, MIN_TOKEN_BUDGET_MAX_FILES, FlightPlan
from durable_navigator.repomap import RepoMap
from durable_navigator.repomap.layout import header_line
from durable_navigator.repomap.tokens import count_tokens


def _minimal_header_tokens(files: int, budget: int) -> int:
    """Tokens of the header-only map as ``render._minimal`` writes it (tokens field = its own count)."""
    guess = budget
    for _ in range(4):
        total = count_tokens(header_line({"budget": budget, "tokens": guess, "files": files, "hidden": files,
                                          "minimal": True}))
        if total == guess:
            return total
        guess = total
    return guess


def test_the_constant_is_the_minimal_header_of_the_largest_repository_it_covers() -> None:
    # at the floor the budget field itself is small; the file counts decide the size
    worst = max(_minimal_header_tokens(files, MIN_TOKEN_BUDGET) for files in (1, 999, 1000, MIN_TOKEN_BUDGET_MAX_FILES))
    assert worst == MIN_TOKEN_BUDGET
    assert _minimal_header_tokens(MIN_TOKEN_BUDGET_MAX_FILES + 1, MIN_TOKEN_BUDGET) > MIN_TOKEN_BUDGET


def test_the_engine_renders_at_the_floor_and_refuses_below_it(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.py").write_text("A = 1\n")
    rm = RepoMap.open(repo, cache_dir=tmp_path / "cache", jobs=1)
    assert count_tokens(rm.render(FlightPlan(token_budget=MIN_TOKEN_BUDGET)).text) <= MIN_TOKEN_BUDGET
    with pytest.raises(FlightPlanError, match=f"at least {MIN_TOKEN_BUDGET}$"):
        rm.render(FlightPlan(token_budget=MIN_TOKEN_BUDGET - 1))
