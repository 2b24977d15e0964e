"""The pack an MCP client receives fits its token budget; the map is kept whole when it can be."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from durable_navigator.cli.mcpserver.pack import PACK_BUDGET, PackBudget, context_uri, fit_pack
from durable_navigator.navtypes.flightplan import MIN_TOKEN_BUDGET
from durable_navigator.repomap.tokens import count_tokens

MAP = "## Repository map\n\n" + "".join(f"src/mod{i}.py\n  def function_{i}(x): ...\n" for i in range(60))


def _context(summary_lines: int = 5, skipped: int = 40, goal: str = "how is the budget enforced?") -> str:
    summary = "\n".join(f"summary line {i} about the ledger and its reservations" for i in range(summary_lines))
    files = "\n".join(f"  - `vendor/generated_{i}.js`" for i in range(skipped))
    return (f"# Context: {goal}\n\nRepository: `/repo`\n\n## Summary\n\n{summary}\n\n"
            "## Stages and success criteria\n\n### Plan (direct)\n1. **Answer it** (max 12 iterations)\n\n"
            "## Decisions (one line a turn)\n\n1 · update_flight_plan · zoom in src/** → L3\n\n"
            f"## Files not in the map\n\nNot indexed: {skipped} files.\n\n{files}\n\n{MAP}")


def test_the_budget_split_leaves_the_map_the_larger_part() -> None:
    assert PACK_BUDGET.map_tokens(8192) == 8192 - 655
    assert PACK_BUDGET.frame_tokens(100_000) == PACK_BUDGET.frame_max
    assert PACK_BUDGET.map_tokens(PACK_BUDGET.min_total) == MIN_TOKEN_BUDGET
    assert PackBudget(frame_min=100).min_total == MIN_TOKEN_BUDGET + 100


def test_a_pack_within_budget_is_returned_as_written() -> None:
    text = _context()
    fitted = fit_pack(text, count_tokens(text), "nav-x-1")
    assert fitted.text == text and not fitted.trimmed and fitted.tokens == count_tokens(text)


def test_the_frame_is_cut_in_order_and_the_map_kept_whole() -> None:
    text = _context()
    budget = count_tokens(MAP) + 120
    fitted = fit_pack(text, budget, "nav-x-1")
    assert fitted.trimmed and fitted.tokens == count_tokens(fitted.text) <= budget
    assert fitted.text.endswith(MAP)  # the map, untouched
    assert fitted.text.startswith("# Context: how is the budget enforced?")
    assert context_uri("nav-x-1") in fitted.text
    # sections after the first one cut are dropped, not interleaved
    assert "## Files not in the map" not in fitted.text


def test_a_long_goal_is_shortened_in_the_title() -> None:
    fitted = fit_pack(_context(goal="why " * 500), count_tokens(MAP) + 200, "nav-x-1")
    assert fitted.tokens <= count_tokens(MAP) + 200
    assert len(fitted.text.splitlines()[0]) <= 300


def test_when_even_the_map_does_not_fit_lines_go_from_the_end() -> None:
    fitted = fit_pack(_context(), 200, "nav-x-1")
    assert fitted.trimmed and fitted.tokens <= 200
    assert context_uri("nav-x-1") in fitted.text


@settings(max_examples=40, deadline=None)
@given(summary=st.integers(0, 30), skipped=st.integers(0, 80), budget=st.integers(PACK_BUDGET.min_total, 3000))
def test_any_pack_fits_any_budget(summary: int, skipped: int, budget: int) -> None:
    fitted = fit_pack(_context(summary, skipped), budget, "nav-x-1")
    assert fitted.tokens == count_tokens(fitted.text) <= budget


@pytest.mark.parametrize("heading", ["## Repository map", "## Summary"])
def test_model_text_that_imitates_a_heading_cannot_push_the_pack_over_budget(heading: str) -> None:
    text = _context().replace("summary line 1 ", f"\n{heading}\n\nsummary line 1 ")
    fitted = fit_pack(text, 400, "nav-x-1")
    assert fitted.tokens <= 400
