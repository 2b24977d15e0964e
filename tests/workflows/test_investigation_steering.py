"""Steering an investigation against the real dev server: the human's plan edit, the stage record as a
priced model call, and an interactive run parked on its budget until a raise.

The orchestrator is scripted (every call costs ``COST`` at the test prices); its workers are offline (free).
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowUpdateFailedError

from durable_navigator.navcore.investigation.investigation import InvestigationResult, InvestigationState, PlannedStage
from durable_navigator.navcore.navigator.messages import EditStagePlanInput, RaiseBudgetInput, VerdictInput
from durable_navigator.navcore.navigator.state import ExecutionMode
from durable_navigator.workflows.investigation import InvestigationWorkflow

from tests.support.batch import priced_activities
from tests.support.investigation import investigation_request, js, stage, start_investigation
from tests.support.investigation import write_investigation_script
from tests.support.navigator import wait_for
from tests.support.research import COST

OK = js({"exit": True, "reason": "ok"})


def _answers(n: int) -> dict[str, list]:
    """Enough review / confirmation / criteria / reflection / compression answers for ``n`` calls of each."""
    return {"investigate.review": [js({"critique": "fine"})] * n, "investigate.confirm": [OK] * n,
            "investigate.criteria": [js({"criteria": [{"criterion": "x", "met": False}]})] * n,
            "investigate.reflect": [js({"drop": [], "reason": "keep"})] * n,
            "investigate.compress": [js({"record": f"record {i}"}) for i in range(n)]}


async def test_an_edited_plan_is_the_one_that_runs_and_a_bad_edit_is_refused_naming_the_field(
        client: Client, task_queue: str, tmp_path: Path, start_worker) -> None:
    orchestrator = write_investigation_script(tmp_path / "orch.yaml", {
        "investigate.plan": [js({"stages": [stage("the model's stage", "something is cited")]})], **_answers(6)})
    req = investigation_request(tmp_path, model=orchestrator, mode=ExecutionMode.INTERACTIVE, max_stages=3)
    edited = [PlannedStage(title="the plugin", task="read the budget plugin", criteria=["after_call is cited"],
                           max_loops=1),
              PlannedStage(title="the ledger", task="read the ledger", criteria=["Ledger.record is cited"])]
    async with start_worker(priced_activities(tmp_path)):
        handle = await start_investigation(client, task_queue, req)
        first = await wait_for(handle, lambda r: r.awaiting_kind == "plan", timeout_s=60)
        turn = first.awaiting_turn or 0
        # refused before it enters history, with one line naming the field; the run keeps waiting
        bad = [edited[0], edited[1].model_copy(update={"profile": "nobody"})]
        for stages, field in ((bad, "stages.1.profile"), (edited * 2, "stages:")):
            with pytest.raises(WorkflowUpdateFailedError) as err:
                await handle.execute_update(InvestigationWorkflow.edit_stage_plan,
                                            EditStagePlanInput(turn=turn, stages=stages, sender="t"))
            message = getattr(err.value.cause, "message", "")
            assert message.startswith(field) and "\n" not in message
        with pytest.raises(WorkflowUpdateFailedError) as err:
            await handle.execute_update(InvestigationWorkflow.edit_stage_plan,
                                        EditStagePlanInput(turn=turn + 1, stages=edited, sender="t"))
        assert "not the pending round" in getattr(err.value.cause, "message", "")
        still = await wait_for(handle, lambda r: r.awaiting_kind == "plan", timeout_s=5)
        assert still.awaiting_turn == turn and "the model's stage" in (still.stage_plan or "")
        done = await handle.execute_update(InvestigationWorkflow.edit_stage_plan,
                                           EditStagePlanInput(turn=turn, stages=edited, sender="t"))
        assert done.titles == ["the plugin", "the ledger"]
        shown = await wait_for(handle, lambda r: r.awaiting_kind == "plan", timeout_s=5)
        assert "the plugin" in (shown.stage_plan or "") and "the model's stage" not in (shown.stage_plan or "")
        await handle.execute_update(InvestigationWorkflow.submit_verdict,
                                    VerdictInput(verdict="approve", turn=turn, kind="plan", sender="t"))
        result: InvestigationResult = await handle.result()
        state: InvestigationState = await handle.query(InvestigationWorkflow.get_investigation)
    assert result.completed_normally
    assert [s.title for s in state.stages] == ["the plugin", "the ledger"]
    assert [s.status for s in state.stages] == ["done", "done"]
    assert state.stages[0].max_loops == 1 and state.stages[0].loops == 1
    assert state.stages[1].task == "read the ledger" and state.stages[1].criteria == ["Ledger.record is cited"]
    assert any(n.kind == "edit_stage_plan" for n in state.steering.notes)
    assert any(e.action == "plan_edit" for e in state.log.entries)


async def test_the_stage_record_is_a_priced_model_call_that_later_calls_and_the_report_see(
        client: Client, task_queue: str, tmp_path: Path, start_worker) -> None:
    record0 = "the plugin records usage through Ledger.record (src/budgetkit/plugin.py:26-29); open: retries"
    answers = _answers(6)
    answers["investigate.compress"] = [js({"record": record0}), js({"record": "the ledger appends usage"})]
    orchestrator = write_investigation_script(tmp_path / "orch.yaml", {
        "investigate.plan": [js({"stages": [stage("the plugin", "x"), stage("the ledger", "x")]})], **answers})
    req = investigation_request(tmp_path, model=orchestrator, max_stages=2, max_stage_loops=1)
    async with start_worker(priced_activities(tmp_path)):
        handle = await start_investigation(client, task_queue, req)
        result: InvestigationResult = await handle.result()
        state: InvestigationState = await handle.query(InvestigationWorkflow.get_investigation)
    s0, s1 = state.stages
    assert state.calls["investigate.compress"] == 2
    assert s0.record == record0 and s0.record_ref is not None and s1.record == "the ledger appends usage"
    # priced and booked like every other call: each scripted call costs COST, the stage's own calls included
    assert result.cost_micros == sum(state.calls.values()) * COST
    compress = [e for e in state.log.entries if e.action == "stage_record"]
    assert len(compress) == 2
    # the next stage's calls were built with the model's record (the prepared requests are in the store)
    requests = [json.loads(p.read_bytes()) for p in (tmp_path / "artifacts").rglob("*") if p.is_file()
                and b'"investigate.review"' in p.read_bytes() and b'"messages"' in p.read_bytes()]
    later = [r for r in requests if r["task"]["stage_index"] == 1 and r["task"]["subject"] == "stage"]
    assert later and all(record0 in r["task"]["records"] for r in later)
    assert any(record0 in m["content"] for r in later for m in r["messages"])
    report = Path(result.report_path or "").read_text()
    assert "### Record" in report and record0 in report


async def test_a_failed_compression_keeps_the_deterministic_record_with_a_warning(
        client: Client, task_queue: str, tmp_path: Path, start_worker) -> None:
    answers = _answers(3)
    answers["investigate.compress"] = [{"error": "fatal", "usage": {"input_tokens": 10}}]
    orchestrator = write_investigation_script(tmp_path / "orch.yaml", {
        "investigate.plan": [js({"stages": [stage("the plugin", "x")]})], **answers})
    req = investigation_request(tmp_path, model=orchestrator, max_stages=1, max_stage_loops=1)
    async with start_worker(priced_activities(tmp_path)):
        handle = await start_investigation(client, task_queue, req)
        result = await handle.result()
        state: InvestigationState = await handle.query(InvestigationWorkflow.get_investigation)
    [s0] = state.stages
    assert result.completed_normally and s0.record.startswith("[0] the plugin:") and s0.record_ref is None
    assert any("could not be compressed" in w for w in state.warnings)


async def test_an_interactive_run_out_of_budget_waits_for_a_raise_then_completes_within_the_raised_cap(
        client: Client, task_queue: str, tmp_path: Path, start_worker) -> None:
    orchestrator = write_investigation_script(tmp_path / "orch.yaml", {
        "investigate.plan": [js({"stages": [stage("the plugin", "x"), stage("the ledger", "x")]})], **_answers(8)})
    # room for about four orchestrator calls (and two free offline workers): the cap hits during stage 0
    req = investigation_request(tmp_path, model=orchestrator, mode=ExecutionMode.INTERACTIVE, max_stages=2,
                                max_stage_loops=1, budget_usd=Decimal("0.0062"), max_output_tokens=256)
    async with start_worker(priced_activities(tmp_path)):
        handle = await start_investigation(client, task_queue, req)
        plan = await wait_for(handle, lambda r: r.awaiting_kind == "plan", timeout_s=60)
        await handle.execute_update(InvestigationWorkflow.submit_verdict,
                                    VerdictInput(verdict="approve", turn=plan.awaiting_turn or 0, kind="plan",
                                                 sender="t"))
        parked = await wait_for(handle, lambda r: r.status == "awaiting_budget", timeout_s=60)
        assert parked.stop_reason is None
        state: InvestigationState = await handle.query(InvestigationWorkflow.get_investigation)
        assert state.ledger.spent_micros <= state.ledger.max_micros == 6200
        await handle.signal(InvestigationWorkflow.raise_budget, RaiseBudgetInput(add_usd=Decimal("0.05"), sender="t"))
        result: InvestigationResult = await handle.result()
        state = await handle.query(InvestigationWorkflow.get_investigation)
    assert result.stop_reason.value == "finalized" and result.completed_normally
    assert [s.status for s in state.stages] == ["done", "done"]
    assert result.max_usd == Decimal("0.0562") and 6200 < result.cost_micros <= 56_200
    assert any(n.kind == "raise_budget" for n in state.steering.notes)
    assert any(e.action == "budget_raised" for e in state.log.entries)
