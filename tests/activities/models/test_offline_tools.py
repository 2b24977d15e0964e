"""The offline model's code-tool round: when it asks, what it asks, and how the answers steer the survey.

The tool answers are produced by the real tool activities over the real
repo-map engine (``ActivityEnvironment``), and fed back the way the workflow
does (``tool_result_lines``), so the parser is tested against the real format.
"""

from __future__ import annotations

from tests.support import FIXTURE_REPO as FIXTURE_REPO_DIR


import pytest
from temporalio.testing import ActivityEnvironment

from durable_navigator.activities.models.offline import OfflineTurn, offline_decision as _offline_decision
from durable_navigator.activities.models.offline.config import OfflinePolicyConfig as _PolicyConfig
from durable_navigator.activities.models.offline.learned import LearnedConfig
from durable_navigator.activities.models.offline.tools import (
    OfflineToolConfig,
    goal_identifiers,
    parse_tool_results,
    tool_round,
    trace_frames,
)
from durable_navigator.activities.tools import CodeToolActivities
from durable_navigator.navtypes.flightplan import FlightPlan
from durable_navigator.navcore.run.tools import ToolCall, ToolRequest
from durable_navigator.workflows.blocks.tools import tool_result_lines

from durable_navigator import repomap  # noqa: E402  (the real engine; no fake)


# This module tests the hand-tuned rules (``learned.enabled=False``); the learned allocation,
# the default, has its own tests (``test_offline_learned.py``).
def OfflinePolicyConfig(**kw):  # noqa: N802 (stands in for the config class)
    return _PolicyConfig(**{"learned": LearnedConfig(enabled=False), **kw})


def offline_decision(turn, cfg=None):
    return _offline_decision(turn, cfg or OfflinePolicyConfig())

FIXTURE = FIXTURE_REPO_DIR
TRACE_GOAL = (
    "why does this crash?\nTraceback (most recent call last):\n"
    '  File "src/budgetkit/plugin.py", line 28, in after_call\n'
    "    self.ledger.record(model, usage)\nKeyError: 'gpt'"
)


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> repomap.RepoMap:
    return repomap.RepoMap.open(FIXTURE, cache_dir=tmp_path_factory.mktemp("cache"))


def _call(engine: repomap.RepoMap, goal: str, *, iteration: int = 1, plan: FlightPlan | None = None,
          recent: tuple[tuple[str, str], ...] = (), results: tuple[str, ...] = (), tools: bool = True) -> OfflineTurn:
    return OfflineTurn(goal=goal, flight_plan=plan or FlightPlan(token_budget=1500), iteration=iteration,
                       max_iterations=8, recent_decisions=recent, engine=engine, tools_available=tools,
                       tool_results=results)


async def _run(engine: repomap.RepoMap, calls: list[ToolCall]) -> tuple[str, ...]:
    async def engines(root: str) -> repomap.RepoMap:
        return engine

    tools = CodeToolActivities(engine_for=engines)
    results = [await ActivityEnvironment().run(getattr(tools, c.name), ToolRequest(repo_root=str(FIXTURE), call=c))
               for c in calls]
    return tuple(tool_result_lines(results))


def test_identifiers_and_stack_frames_are_read_from_the_goal() -> None:
    assert goal_identifiers("why does `Ledger.record` double count in budget_plugin()?") == ["record",
                                                                                            "budget_plugin"]
    assert goal_identifiers("how is the budget enforced?") == []
    assert trace_frames(TRACE_GOAL) == [("src/budgetkit/plugin.py", 28, "after_call")]
    assert goal_identifiers(TRACE_GOAL) == ["after_call", "record"]  # the frame's function first


def test_one_bounded_round_only_when_the_caller_runs_tools(engine: repomap.RepoMap) -> None:
    first = offline_decision(_call(engine, "why are tokens double-counted by the ledger?"))
    assert first.action == "call_tools" and first.reasoning.startswith("tools:")
    assert [c.name for c in first.tool_calls] == ["search_codebase"]
    # the benchmark loop cannot run tools: it gets the survey at once
    assert offline_decision(_call(engine, "why are tokens double-counted?", tools=False)).action == \
        "update_flight_plan"
    # after its round (seen in the recent decisions) it never asks again
    again = offline_decision(_call(engine, "why are tokens double-counted?", iteration=2,
                                       recent=(("call_tools", first.reasoning),)))
    assert again.action == "update_flight_plan" and again.reasoning.startswith("survey:")
    # too few iterations left for a tool turn: straight to the map
    assert tool_round("why?", FlightPlan(), 7, 8, (), OfflineToolConfig()) == []


async def test_tool_answers_steer_the_survey(engine: repomap.RepoMap) -> None:
    goal = "why does `Ledger.record` count tokens twice?"
    first = offline_decision(_call(engine, goal))
    assert [(c.name, c.args.get("symbol")) for c in first.tool_calls] == [("search_codebase", None),
                                                                        ("get_callers", "record")]
    results = await _run(engine, first.tool_calls)
    hints = parse_tool_results(results)
    assert "src/budgetkit/ledger.py::Ledger.record" in hints.symbols
    assert any("plugin.py" in p for paths in hints.callers.values() for p in paths), hints
    survey = offline_decision(_call(engine, goal, iteration=2, recent=(("call_tools", first.reasoning),),
                                        results=results))
    assert survey.action == "update_flight_plan" and "from the tools:" in survey.reasoning
    assert survey.updates is not None
    symbols = {f.symbol: f for f in survey.updates.add_focus_symbols}
    assert symbols["src/budgetkit/ledger.py::Ledger.record"].expand
    focused = {f.glob: f.weight for f in survey.updates.add_focus_paths}
    # ledger.py (defines it) and plugin.py (calls it) are focused with the tool weights
    tool_weights = {OfflineToolConfig().hit_file_weight, OfflineToolConfig().caller_weight}
    assert focused.get("src/budgetkit/ledger.py") in tool_weights
    assert focused.get("src/budgetkit/plugin.py") in tool_weights


async def test_a_stack_trace_frame_is_read_and_focused(engine: repomap.RepoMap) -> None:
    first = offline_decision(_call(engine, TRACE_GOAL))
    read = [c for c in first.tool_calls if c.name == "read_file"]
    assert read and read[0].args == {"path": "src/budgetkit/plugin.py", "start_line": 13, "end_line": 43}
    results = await _run(engine, first.tool_calls)
    assert parse_tool_results(results).read == ["src/budgetkit/plugin.py"]
    survey = offline_decision(_call(engine, TRACE_GOAL, iteration=2,
                                                 recent=(("call_tools", first.reasoning),), results=results))
    assert "focus src/budgetkit/plugin.py (the stack-trace frame read)" in survey.reasoning


def test_tool_errors_are_reported_not_hidden() -> None:
    hints = parse_tool_results(["### read_file: error\nERROR: refused: ../x escapes the repository"])
    assert hints.empty() and hints.errors == ["read_file: error: refused: ../x escapes the repository"]


def test_search_lines_with_ranges_and_unsure_callers_parse() -> None:
    """The tools' current text: definitions with line ranges; callers with how they were resolved."""
    hints = parse_tool_results([
        "### search 'ledger record': 2 hits\n"
        "src/budgetkit/ledger.py:10-24  score=7.125  src/budgetkit/ledger.py::Ledger.record\n"
        "src/budgetkit/plugin.py  score=3.000",
        "### get_callers record: 1 refs\nsrc/budgetkit/ledger.py::Ledger.record: 1 callers\n"
        "  src/budgetkit/plugin.py:28  src/budgetkit/plugin.py::BudgetPlugin.after_call  (call, jedi)\n"
        "  + 1 sites name 'record' but may mean another definition (the receiver's type is unknown):\n"
        "    tests/test_plugin.py:9  tests/test_plugin.py::test_x",
    ])
    assert hints.hits == [("src/budgetkit/ledger.py", "src/budgetkit/ledger.py::Ledger.record"),
                          ("src/budgetkit/plugin.py", None)]
    assert hints.callers == {"src/budgetkit/ledger.py::Ledger.record": ["src/budgetkit/plugin.py"]}


def test_the_best_search_hit_is_expanded_whatever_its_name() -> None:
    from durable_navigator.activities.models.offline.tools import hint_update
    from durable_navigator.navtypes.flightplan import FlightPlanUpdate

    hints = parse_tool_results(["### search\nsrc/a.py:3-9  score=5.000  src/a.py::parse_header\n"
                                "src/b.py:1-4  score=2.000  src/b.py::other"])
    update, notes = hint_update(FlightPlanUpdate(), hints, "why is the header payload not a dict?", [],
                                OfflineToolConfig(), lambda ex, p: False)
    assert [f.glob for f in update.add_focus_paths] == ["src/a.py", "src/b.py"]
    assert [(f.symbol, f.expand) for f in update.add_focus_symbols] == [("src/a.py::parse_header", True)]
    assert "expand src/a.py::parse_header (best search hit)" in notes


def test_the_survey_focuses_the_files_of_the_three_best_search_hits() -> None:
    """Each file once, best first, the fourth file left to the ranking; a zoomed-out hit is not
    focused (and still counts as one of the three: the survey tunes on what search ranked)."""
    from durable_navigator.activities.models.offline.tools import hint_update
    from durable_navigator.navtypes.flightplan import FlightPlanUpdate

    hints = parse_tool_results(["### search\n"
                                "src/a.py:3-9  score=5.000  src/a.py::parse_header\n"
                                "src/a.py:12-20  score=4.000  src/a.py::parse_body\n"
                                "docs/x.md  score=3.500\n"
                                "src/b.py:1-4  score=3.000  src/b.py::other\n"
                                "src/c.py:1-4  score=2.000  src/c.py::third\n"
                                "src/d.py:1-4  score=1.000  src/d.py::fourth"])
    update, notes = hint_update(FlightPlanUpdate(), hints, "why is the header payload not a dict?", ["docs/**"],
                                OfflineToolConfig(), lambda ex, p: p.startswith("docs/"))
    assert [f.glob for f in update.add_focus_paths] == ["src/a.py", "src/b.py"]
    assert [n for n in notes if n.startswith("focus")] == ["focus src/a.py (top search hit)",
                                                           "focus src/b.py (top search hit)"]
    update, _ = hint_update(FlightPlanUpdate(), hints, "why is the header payload not a dict?", [],
                            OfflineToolConfig(), lambda ex, p: False)
    assert [f.glob for f in update.add_focus_paths] == ["src/a.py", "docs/x.md", "src/b.py"]
