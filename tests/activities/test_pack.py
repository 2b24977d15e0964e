"""The whole context pack (frame + map) fits the user's token budget, counted with the map's counter.

A real repo-map engine over a copy of the engine's own source renders the run's map and re-renders
it smaller; hypothesis draws budgets from the smallest map (26) to 64k and frames from empty to
long (summary, stage plan, decision log, skipped files, goal).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from durable_navigator.activities.pack import MAP_HEADING, MAP_LEFT_OUT, PACK_CONFIG, Frame, build_pack
from durable_navigator.activities.result_pack import renderer
from durable_navigator.activities.skips import files_not_in_map, skipped_files_markdown
from durable_navigator.navtypes.flightplan import MIN_TOKEN_BUDGET, FlightPlan
from durable_navigator.repomap import RepoMap
from durable_navigator.repomap.tokens import count_tokens

GOAL = "why are tokens double-counted in budget enforcement of the rendered map?"
SOURCE = Path(__file__).resolve().parents[2] / "repomap"


class _Skips:
    """The engine attributes ``skipped_files_markdown`` reads (the list's content is its business)."""

    def __init__(self, n: int) -> None:
        self.skipped_files = {f"vendor/gen_{i:03d}.min.js": "minified" for i in range(n)}
        self.index_version = ""


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Any:
    repo = tmp_path_factory.mktemp("repo") / "repomap"
    shutil.copytree(SOURCE, repo, ignore=shutil.ignore_patterns("__pycache__"))
    return RepoMap.open(repo, cache_dir=tmp_path_factory.mktemp("cache"), jobs=1)


def _frame(summary: int, plan: int, decisions: int, skipped: int, goal_words: int) -> Frame:
    return Frame(
        goal=" ".join([GOAL] * goal_words) or GOAL,
        repo_root="/home/someone/src/repomap",
        summary=" ".join(f"the ledger reserves tokens before call {i} and reconciles after;" for i in range(summary)),
        stage_plan="\n".join(f"{i}. **Stage {i}** — find where reservation {i} happens (met)" for i in range(plan)),
        decisions=tuple(f"- step {i} · update_flight_plan · zoom in src/budget/** → L3 · the map shows "
                        f"the reservation path but not reconcile {i}" for i in range(decisions)),
        skipped=skipped_files_markdown(files_not_in_map(_Skips(skipped), "", None)),
    )


def _run_map(engine: Any, budget: int) -> tuple[str, FlightPlan]:
    plan = FlightPlan(token_budget=budget, goal=GOAL)
    return engine.render(plan).text, plan


def test_a_pack_that_fits_is_left_alone(engine: Any) -> None:
    frame = _frame(3, 2, 2, 0, 1)
    run_map, plan = _run_map(engine, 2000)
    budget = count_tokens(frame.text()) + 2100
    pack = build_pack(frame, run_map, 2000, budget, renderer(engine, plan))
    assert pack.text == frame.text() + f"{MAP_HEADING}\n\n{run_map.rstrip()}\n"
    assert not pack.shortened and not pack.map_rerendered and pack.tokens <= budget


def test_a_full_map_keeps_the_frame_within_its_share_and_is_rendered_to_the_rest(engine: Any) -> None:
    frame = _frame(40, 12, 30, 60, 1)
    run_map, plan = _run_map(engine, 4096)
    assert count_tokens(run_map) > 4096 - PACK_CONFIG.frame_tokens(4096)  # the run's map fills its budget
    pack = build_pack(frame, run_map, 4096, 4096, renderer(engine, plan))
    assert pack.tokens <= 4096 and pack.map_rerendered
    frame_part = pack.text[: pack.text.index(f"{MAP_HEADING}\n")]
    assert count_tokens(frame_part) <= PACK_CONFIG.frame_tokens(4096)
    # the map is the engine's rendering at the budget that remains: well-formed, its header first
    assert pack.map_text == engine.render(plan.model_copy(update={"token_budget": pack.map_budget})).text
    assert pack.map_text.startswith("# repo-map ") and pack.map_budget >= 4096 - PACK_CONFIG.frame_tokens(4096) - 8
    # the frame gave way in order: the skipped list and the decision log first, the title last
    assert "decision log" in pack.shortened and "title" not in pack.shortened
    assert "earlier turns in report.json" in pack.text or "decision log" in pack.text


def test_a_map_with_room_to_spare_is_kept_as_the_run_rendered_it(engine: Any) -> None:
    run_map, plan = _run_map(engine, 7000)
    spare = 8192 - count_tokens(f"{MAP_HEADING}\n\n{run_map.rstrip()}\n")
    frame = _frame(60, 12, 40, 60, 1)
    assert count_tokens(frame.text()) > spare > PACK_CONFIG.frame_tokens(8192)
    pack = build_pack(frame, run_map, 7000, 8192, renderer(engine, plan))
    assert pack.tokens <= 8192 and not pack.map_rerendered and pack.map_text == run_map
    assert pack.shortened  # the frame gave way to fit beside it


def test_the_skipped_list_is_cut_to_a_count_that_adds_up(engine: Any) -> None:
    frame = _frame(0, 0, 0, 200, 1)
    run_map, plan = _run_map(engine, 1000)
    pack = build_pack(frame, run_map, 1000, 1000, renderer(engine, plan))
    assert pack.tokens <= 1000
    listed = pack.text.count("  - `vendor/gen_")
    more = int(pack.text.split(" more skipped files, see report.json")[0].rsplit("- ", 1)[1])
    assert listed + more == 200, (listed, more)


def test_tiny_budgets_keep_a_well_formed_pack(engine: Any) -> None:
    run_map, plan = _run_map(engine, 4096)
    for budget in (MIN_TOKEN_BUDGET, 40, 100):
        pack = build_pack(_frame(10, 5, 5, 20, 3), run_map, 4096, budget, renderer(engine, plan))
        assert pack.tokens <= budget and pack.text.startswith("# Context")
        assert f"\n{MAP_HEADING}\n\n" in pack.text
        assert pack.map_left_out == (pack.map_text == MAP_LEFT_OUT)
    with pytest.raises(ValueError, match="at least 26"):
        build_pack(_frame(1, 0, 0, 0, 1), run_map, 4096, MIN_TOKEN_BUDGET - 1, None)


def test_without_an_engine_the_map_is_cut_at_a_line_and_says_so(engine: Any) -> None:
    run_map, _ = _run_map(engine, 3000)
    pack = build_pack(_frame(20, 5, 10, 10, 1), run_map, 3000, 1500, None)
    assert pack.tokens <= 1500 and pack.map_rerendered
    assert pack.map_text.endswith("the repository could not be opened to render it smaller)\n")
    kept = pack.map_text.split("\n")[:-2]
    assert all(line in run_map.split("\n") for line in kept)  # whole lines of the run's map


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(budget=st.one_of(st.integers(MIN_TOKEN_BUDGET, 600), st.integers(600, 65_536)),
       summary=st.integers(0, 60), plan=st.integers(0, 30), decisions=st.integers(0, 80),
       skipped=st.integers(0, 120), goal_words=st.integers(1, 40), run_share=st.floats(0.3, 1.0))
def test_the_pack_never_exceeds_its_budget(engine: Any, budget: int, summary: int, plan: int, decisions: int,
                                           skipped: int, goal_words: int, run_share: float) -> None:
    # the run's own map used its budget (run_share < 1: a run whose map budget was below the pack's)
    run_budget = max(MIN_TOKEN_BUDGET, int(budget * run_share))
    run_map, flight = _run_map(engine, run_budget)
    frame = _frame(summary, plan, decisions, skipped, goal_words)
    pack = build_pack(frame, run_map, run_budget, budget, renderer(engine, flight))
    assert pack.tokens == count_tokens(pack.text) <= budget
    assert f"\n{MAP_HEADING}\n\n" in pack.text and pack.text.startswith("# Context")
    if not pack.map_left_out:
        assert pack.map_text.startswith("# repo-map ")  # a rendered map, never a cut one
    if budget >= 600:  # room for the map beside the frame's share: the map is never left out
        assert not pack.map_left_out
        # ... and it is rendered at what the frame's share leaves, or kept as the run rendered it
        assert pack.map_budget >= min(count_tokens(run_map), budget - PACK_CONFIG.frame_tokens(budget)) - 16
