"""Code-tool calls inside NavigatorWorkflow (real dev server, scripted model).

A ``call_tools`` decision runs each call as its ``tools.*`` activity; the
next prompt shows the capped results; a ``../`` escape comes back as an error
result and the run goes on.
"""

from __future__ import annotations

import uuid

from tests.support.navigator import ZOOM_BUDGET, ScriptProvider
from tests.support.navigator import make_activities, make_request, run
from temporalio.api.enums.v1 import EventType

from durable_navigator.navcore.navigator.state import StopReason
from durable_navigator.navcore.run.tools import ToolCall
from durable_navigator.workflows.navigator import NavigatorWorkflow

CALLS = [
    ToolCall(name="search_codebase", args={"query": "ledger reserve"}),
    ToolCall(name="read_file", args={"path": "src/budgetkit/ledger.py", "start_line": 1, "end_line": 5}),
    ToolCall(name="read_file", args={"path": "../../etc/passwd"}),
]


async def test_tool_call_round_trip_with_an_escape_attempt(client, task_queue, start_worker, tmp_path) -> None:
    provider = ScriptProvider(steps=[CALLS, ZOOM_BUDGET])
    wf_id = f"nav-tools-{uuid.uuid4()}"
    async with start_worker(make_activities(tmp_path, provider)):
        result = await run(client, task_queue, make_request(tmp_path), wf_id)
        handle = client.get_workflow_handle(wf_id)
        log = await handle.query(NavigatorWorkflow.get_decision_log)
        history = await handle.fetch_history()
    assert result.stop_reason is StopReason.FINALIZED and result.iterations == 3
    entry = log.entries[0]
    assert entry.action == "call_tools" and entry.diff_lines[0] == "search_codebase 'ledger reserve'"
    assert entry.error is not None and "read_file" in entry.error  # the escape, as an error result
    # the next prompt (and only that one) shows the results
    second, third = provider.prompts[1], provider.prompts[2]
    assert "## Tool results" in second and "## Tool results" not in third
    assert "ledger.py" in second and "ERROR:" in second
    assert "root:" not in second  # nothing outside the repository was read
    scheduled = [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
    assert scheduled.count("tools.read_file") == 2 and "tools.search_codebase" in scheduled


def _loop_warnings(prompts: list[str]) -> list[int]:
    return [i + 1 for i, p in enumerate(prompts) if "LOOP WARNING" in p]


async def test_distinct_tool_turns_are_not_loop_repeats(client, task_queue, start_worker, tmp_path) -> None:
    # five tool-only turns leave the flight plan unchanged; each asks something new
    queries = ["ledger", "reserve", "budget limit", "token count", "cli command"]
    steps: list = [[ToolCall(name="search_codebase", args={"query": q})] for q in queries]
    provider = ScriptProvider(steps=[*steps, ZOOM_BUDGET])
    wf_id = f"nav-tools-distinct-{uuid.uuid4()}"
    async with start_worker(make_activities(tmp_path, provider)):
        result = await run(client, task_queue, make_request(tmp_path, max_iterations=10), wf_id)
        log = await client.get_workflow_handle(wf_id).query(NavigatorWorkflow.get_decision_log)
    assert result.stop_reason is StopReason.FINALIZED and result.iterations == 7
    assert [e.action for e in log.entries[:5]] == ["call_tools"] * 5
    assert _loop_warnings(provider.prompts) == []


async def test_the_same_tool_call_three_times_is_a_loop(client, task_queue, start_worker, tmp_path) -> None:
    same = [ToolCall(name="read_file", args={"path": "src/budgetkit/ledger.py", "start_line": 1, "end_line": 5})]
    provider = ScriptProvider(steps=[same] * 8)
    wf_id = f"nav-tools-loop-{uuid.uuid4()}"
    async with start_worker(make_activities(tmp_path, provider)):
        result = await run(client, task_queue, make_request(tmp_path, max_iterations=10), wf_id)
    # three identical calls: a warning in the 4th prompt; the 4th repeat finalizes before step 5
    assert _loop_warnings(provider.prompts) == [4]
    assert "the same tool call" in provider.prompts[3]
    assert result.stop_reason is StopReason.LOOP_DETECTED and result.iterations == 4
    assert "near-identical" in (result.stop_detail or "")
    assert result.context_path is not None


async def test_offline_model_uses_code_tools_then_focuses_what_they_found(
    client, task_queue, start_worker, tmp_path
) -> None:
    from datetime import timedelta

    from durable_navigator.activities.artifacts import LocalArtifactStore
    from durable_navigator.activities.pricing_loader import TablePricer
    from durable_navigator.activities.navigator import NavigatorActivities
    from tests.support.navigator import FIXTURE_REPO

    from durable_navigator.navcore.navigator.requests import ExplorationRequest

    from tests.support.navigator import with_hand_rules

    # the hand rules take the tool round (the default learned allocation ranks every chunk itself)
    acts = with_hand_rules(NavigatorActivities(LocalArtifactStore(tmp_path / "artifacts"), pricer=TablePricer.load()))
    req = ExplorationRequest(repo_path=str(FIXTURE_REPO), goal="why does `Ledger.record` count tokens twice?",
                             model="offline", token_budget=1500, max_iterations=6, out_dir=str(tmp_path / "out"))
    wf_id = f"nav-offline-tools-{uuid.uuid4()}"
    async with start_worker(acts):
        result = await client.execute_workflow(NavigatorWorkflow.run, req, id=wf_id, task_queue=task_queue,
                                               execution_timeout=timedelta(seconds=90))
        handle = client.get_workflow_handle(wf_id)
        log = await handle.query(NavigatorWorkflow.get_decision_log)
        plan = await handle.query(NavigatorWorkflow.get_flight_plan)
    moves = [e for e in log.entries if e.step >= 1]
    # planning (default "auto") first, then one tool round, then the survey that uses its answers
    assert [e.action for e in log.entries][:2] == ["planning_analysis", "stage_plan"]
    assert moves[0].action == "call_tools" and moves[0].diff_lines[:2] == [
        "search_codebase 'record ledger count tokens twice'", "get_callers record"]
    assert moves[1].action == "update_flight_plan" and "from the tools:" in moves[1].reasoning
    assert sum(e.action == "call_tools" for e in moves) == 1  # bounded: one round per run
    assert any(f.symbol == "src/budgetkit/ledger.py::Ledger.record" for f in plan.focus_symbols)
    assert result.stop_reason is StopReason.FINALIZED
    assert "def record" in open(result.context_path or "").read()
