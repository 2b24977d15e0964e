"""NavigatorWorkflow against a real dev server: the autonomous path and budget rules."""

from __future__ import annotations

import json
import uuid
from decimal import Decimal
from pathlib import Path

from tests.support.navigator import (
    NO_LOOP_GUARD,
    ZOOM_BUDGET,
    ZOOM_OUT_CLI,
    ScriptProvider,
    make_activities,
    make_request,
    run,
)

from durable_navigator.navcore.run.decision import TokenUsage
from durable_navigator.navcore.navigator.requests import ModelCallConfig
from durable_navigator.navcore.navigator.state import StopReason
from durable_navigator.workflows.navigator import SA_COST_USD, SA_ITERATION, SA_STATUS, NavigatorWorkflow

async def test_autonomous_run_finalizes(client, task_queue, start_worker, tmp_path) -> None:
    provider = ScriptProvider(steps=[ZOOM_BUDGET, ZOOM_OUT_CLI])
    acts = make_activities(tmp_path, provider)
    wf_id = f"nav-{uuid.uuid4()}"
    async with start_worker(acts):
        result = await run(client, task_queue, make_request(tmp_path), wf_id)
        handle = client.get_workflow_handle(wf_id)
        history = await handle.fetch_history()
        described = await handle.describe()
    assert result.stop_reason is StopReason.FINALIZED
    assert result.iterations == 3 and result.decisions == 3
    # Web UI: readable activity summaries, search attributes, memo
    summaries = [
        e.user_metadata.summary.data.decode()
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
    ]
    assert '"iter 1 · zoom in src/budgetkit/** → L4; focus src/budgetkit · $0.0012"' in summaries
    assert described.typed_search_attributes[SA_STATUS] == "completed"
    assert described.typed_search_attributes[SA_ITERATION] == 3
    assert described.typed_search_attributes[SA_COST_USD] == 0.0036
    assert (await described.memo_value("goal")) == make_request(tmp_path).goal
    # 3 calls × (1000 input × $1/M + 100 output × $2/M) = 3 × 1200 micro-dollars
    assert result.cost_micros == 3 * 1200
    assert result.usage == TokenUsage(input_tokens=3000, output_tokens=300)
    context = Path(result.context_path or "").read_text()
    assert "The budget plugin double-counts." in context
    assert "src/budgetkit/plugin.py" in context and "def after_call" in context
    report = json.loads(Path(result.report_path or "").read_text())
    assert report["stop_reason"] == "finalized"
    assert [d["action"] for d in report["decisions"]] == ["update_flight_plan", "update_flight_plan", "finalize_context"]
    assert report["decisions"][0]["diff_lines"][0] == "+ rule src/budgetkit/** → L4"
    # the reasoning, one line a turn, before the map
    decisions = context.split("## Decisions (one line a turn)\n\n")[1].split("\n\n")[0].splitlines()
    assert [line.split(" · ")[:2] for line in decisions] == [
        ["- step 1", "update_flight_plan"], ["- step 2", "update_flight_plan"], ["- step 3", "finalize_context"]]
    assert "+ rule src/budgetkit/** → L4" in decisions[0] and "$0.0012" in decisions[0]
    assert context.index("## Decisions") < context.index("## Repository map")


async def test_budget_exhaustion_refuses_the_call(client, task_queue, start_worker, tmp_path) -> None:
    provider = ScriptProvider(steps=[ZOOM_BUDGET])
    acts = make_activities(tmp_path, provider)
    # the first prompt (~1k tokens) + 2048 max output at $2/M is far above $0.001
    req = make_request(tmp_path, budget_usd=Decimal("0.001"))
    async with start_worker(acts):
        result = await run(client, task_queue, req)
    assert result.stop_reason is StopReason.BUDGET_EXHAUSTED
    assert "raise the budget or finalize" in (result.stop_detail or "")
    assert result.cost_micros == 0 and result.iterations == 0
    assert provider.prompts == []  # the model was never called
    report = json.loads(Path(result.report_path or "").read_text())
    assert report["ledger"]["refused"] == 1 and report["ledger"]["reservations"] == []
    assert [d["action"] for d in report["decisions"]] == ["budget_refused"]
    assert "src/budgetkit/plugin.py" in Path(result.context_path or "").read_text()  # first map still written


async def test_ledger_counts_usage_of_failed_attempts(client, task_queue, start_worker, tmp_path) -> None:
    lost = TokenUsage(input_tokens=700, output_tokens=50)  # the broken attempt's spend
    provider = ScriptProvider(steps=[ZOOM_BUDGET], fail_first_attempt={2: lost})
    acts = make_activities(tmp_path, provider)
    req = make_request(tmp_path, model_call=ModelCallConfig(max_attempts=2, initial_interval_s=0.1))
    async with start_worker(acts):
        result = await run(client, task_queue, req)
    assert result.stop_reason is StopReason.FINALIZED and result.iterations == 2
    assert result.usage == provider.usage + provider.usage + lost
    assert result.cost_micros == 2 * 1200 + (700 + 2 * 50)
    assert result.model_attempts == 3
    report = json.loads(Path(result.report_path or "").read_text())
    assert [d["attempts"] for d in report["decisions"]] == [1, 2]
    assert sum(d["cost_micros"] for d in report["decisions"]) == result.cost_micros


async def test_failed_decide_still_finalizes_with_its_usage(client, task_queue, start_worker, tmp_path) -> None:
    lost = TokenUsage(input_tokens=500)
    provider = ScriptProvider(steps=[ZOOM_BUDGET], fail_first_attempt={2: lost})
    acts = make_activities(tmp_path, provider)
    async with start_worker(acts):
        result = await run(client, task_queue, make_request(tmp_path))  # one attempt only
    assert result.stop_reason is StopReason.FAILED
    assert "stream broke" in (result.stop_detail or "")
    assert result.cost_micros == 1200 + 500 and result.model_attempts == 2
    assert "def after_call" in Path(result.context_path or "").read_text()


async def test_continue_as_new_keeps_the_decision_log(client, task_queue, start_worker, tmp_path) -> None:
    provider = ScriptProvider(steps=[ZOOM_BUDGET, ZOOM_OUT_CLI] * 4)
    acts = make_activities(tmp_path, provider)
    # the script oscillates on purpose; loop detection (tested on its own) would end it early
    req = make_request(tmp_path, max_iterations=12, continue_as_new_events=50, profile=NO_LOOP_GUARD)
    wf_id = f"nav-{uuid.uuid4()}"
    async with start_worker(acts):
        result = await run(client, task_queue, req, wf_id)
        log = await client.get_workflow_handle(wf_id).query(NavigatorWorkflow.get_decision_log)
    assert result.continued_runs >= 2
    assert result.stop_reason is StopReason.FINALIZED and result.iterations == 9
    assert [e.step for e in log.entries] == list(range(1, 10))
    assert result.cost_micros == 9 * 1200
