"""Interactive NavigatorWorkflow: verdicts by signal, plan edits by update, stop."""

from __future__ import annotations

import json
import uuid

import pytest
from tests.support.navigator import ZOOM_BUDGET, ZOOM_OUT_CLI, ScriptProvider, update, wait_for
from temporalio.client import WorkflowUpdateFailedError
from tests.support.navigator import TIMEOUT, make_activities, make_request

from durable_navigator.navtypes.flightplan import FlightPlan
from durable_navigator.navcore.navigator.messages import ApproveInput, EditFlightPlanInput, RejectInput, StopInput
from durable_navigator.navcore.navigator.report import DecisionLogView
from durable_navigator.navcore.navigator.requests import ApprovalConfig, ExplorationResult
from durable_navigator.navcore.navigator.state import ExecutionMode, StopReason
from durable_navigator.workflows.navigator import NavigatorWorkflow


def _plan_fields(**kw: object) -> dict[str, object]:
    fields = FlightPlan().model_dump()
    fields.update(kw)
    return fields


async def test_interactive_reject_feedback_edit_and_approve(client, task_queue, start_worker, tmp_path) -> None:
    provider = ScriptProvider(steps=[ZOOM_BUDGET, ZOOM_OUT_CLI])
    acts = make_activities(tmp_path, provider)
    req = make_request(tmp_path, mode=ExecutionMode.INTERACTIVE)
    async with start_worker(acts):
        handle = await client.start_workflow(
            NavigatorWorkflow.run, req, id=f"nav-{uuid.uuid4()}", task_queue=task_queue, execution_timeout=TIMEOUT
        )
        await wait_for(handle, lambda r: r.awaiting_turn == 1)
        proposed = await handle.query(NavigatorWorkflow.get_flight_plan)
        assert proposed.rules[0].glob == "src/budgetkit/**"
        await handle.signal(NavigatorWorkflow.reject, RejectInput(turn=1, sender="alice", feedback="Look at pricing.py first"))
        # a duplicate and a stale verdict are ignored, not applied to the next turn
        await handle.signal(NavigatorWorkflow.approve, ApproveInput(turn=1, sender="bob"))
        await wait_for(handle, lambda r: r.awaiting_turn == 2)
        assert (await handle.query(NavigatorWorkflow.get_flight_plan)).rules[0].glob == "src/budgetkit/cli.py"
        notes = (await handle.query(NavigatorWorkflow.get_decision_log)).notes
        assert [(n.sender, n.note.startswith("ignored:")) for n in notes if n.turn == 1][-2:] == \
            [("alice", False), ("bob", True)]  # bob's approve came after alice's reject: noted, not applied

        # edits are validated: wrong turn and a '..' glob are refused, a good one is applied
        with pytest.raises(WorkflowUpdateFailedError):
            await handle.execute_update(
                NavigatorWorkflow.edit_flight_plan, EditFlightPlanInput(turn=1, update=update(add_exclude=["docs"]))
            )
        with pytest.raises(WorkflowUpdateFailedError):
            await handle.execute_update(
                NavigatorWorkflow.edit_flight_plan,
                # built without validation, as a buggy client could send it; the workflow re-validates
                EditFlightPlanInput.model_construct(
                    turn=2, sender="t", update=None, plan=FlightPlan.model_construct(**_plan_fields(exclude=["../x"]))
                ),
            )
        edited = await handle.execute_update(
            NavigatorWorkflow.edit_flight_plan,
            EditFlightPlanInput(turn=2, sender="alice", update=update(set_rules=[{"glob": "src/budgetkit/pricing.py", "level": 4}])),
        )
        assert [r.glob for r in edited.rules] == ["src/budgetkit/cli.py", "src/budgetkit/pricing.py"]
        await handle.signal(NavigatorWorkflow.approve, ApproveInput(turn=2, sender="alice"))
        await wait_for(handle, lambda r: r.awaiting_turn is None and r.step >= 3)
        result: ExplorationResult = await handle.result()
        log = await handle.query(NavigatorWorkflow.get_decision_log)
        final_plan = await handle.query(NavigatorWorkflow.get_flight_plan)

    assert result.stop_reason is StopReason.FINALIZED
    # the model saw the reject feedback in the prompt of step 2, stored as an artifact
    assert "Look at pricing.py first" in provider.prompts[1]
    assert "Look at pricing.py first" not in provider.prompts[0] + provider.prompts[2]
    assert isinstance(log, DecisionLogView)
    assert [(e.step, e.verdict) for e in log.entries] == [(1, "reject"), (2, "approve"), (3, None)]
    assert log.entries[0].feedback == "Look at pricing.py first"
    assert any(n.note.startswith("ignored") and n.sender == "bob" for n in log.notes)
    assert "+ rule src/budgetkit/pricing.py → L4" in log.entries[1].diff_lines
    assert [r.glob for r in final_plan.rules] == ["src/budgetkit/cli.py", "src/budgetkit/pricing.py"]
    assert "PRICES = {" in open(result.context_path or "").read()  # pricing.py at full source


async def test_stop_mid_run_finalizes_best_so_far(client, task_queue, start_worker, tmp_path) -> None:
    provider = ScriptProvider(steps=[ZOOM_BUDGET] * 20, delay_s=0.3)
    acts = make_activities(tmp_path, provider)
    req = make_request(tmp_path, max_iterations=20)
    async with start_worker(acts):
        handle = await client.start_workflow(
            NavigatorWorkflow.run, req, id=f"nav-{uuid.uuid4()}", task_queue=task_queue, execution_timeout=TIMEOUT
        )
        await wait_for(handle, lambda r: r.step >= 2)
        await handle.signal(NavigatorWorkflow.stop, StopInput(sender="carol", reason="enough for now"))
        result: ExplorationResult = await handle.result()
    assert result.stop_reason is StopReason.STOPPED
    assert "carol" in (result.stop_detail or "")
    assert 2 <= result.iterations < 20
    report = json.loads(open(result.report_path or "").read())
    assert report["flight_plan"]["rules"][0]["glob"] == "src/budgetkit/**"  # the best plan so far
    assert "def after_call" in open(result.context_path or "").read()


async def test_approval_timeout_uses_default_verdict(client, task_queue, start_worker, tmp_path) -> None:
    provider = ScriptProvider(steps=[ZOOM_BUDGET])
    acts = make_activities(tmp_path, provider)
    req = make_request(
        tmp_path, mode=ExecutionMode.INTERACTIVE, approval=ApprovalConfig(timeout_s=1.0, default_verdict="stop")
    )
    async with start_worker(acts):
        result = await client.execute_workflow(
            NavigatorWorkflow.run, req, id=f"nav-{uuid.uuid4()}", task_queue=task_queue, execution_timeout=TIMEOUT
        )
    assert result.stop_reason is StopReason.APPROVAL_TIMEOUT
    assert result.iterations == 1
    # the unapproved proposal was rolled back: the pack holds the first map and plan
    report = json.loads(open(result.report_path or "").read())
    assert report["flight_plan"]["rules"] == []
    first = report["decisions"][0]
    assert first["verdict"] == "stop" and result.map_metadata is not None
    assert result.map_metadata.tokens_used == first["map_tokens_before"]


async def test_interactive_budget_park_waits_for_a_raise(client, task_queue, start_worker, tmp_path) -> None:
    from decimal import Decimal

    from durable_navigator.navcore.navigator.messages import RaiseBudgetInput

    provider = ScriptProvider(steps=[ZOOM_BUDGET])
    acts = make_activities(tmp_path, provider)
    req = make_request(tmp_path, mode=ExecutionMode.INTERACTIVE, budget_usd=Decimal("0.001"))
    async with start_worker(acts):
        handle = await client.start_workflow(
            NavigatorWorkflow.run, req, id=f"nav-{uuid.uuid4()}", task_queue=task_queue, execution_timeout=TIMEOUT
        )
        parked = await wait_for(handle, lambda r: r.status == "awaiting_budget")
        assert parked.step == 0 and provider.prompts == []
        await handle.signal(NavigatorWorkflow.raise_budget, RaiseBudgetInput(sender="dave", add_usd=Decimal("1")))
        await wait_for(handle, lambda r: r.awaiting_turn == 1)
        await handle.signal(NavigatorWorkflow.approve, ApproveInput(turn=1, sender="dave"))
        result: ExplorationResult = await handle.result()
    assert result.stop_reason is StopReason.FINALIZED
    assert result.max_usd == Decimal("1.001")
    assert result.cost_micros == 2 * 1200


async def test_set_mode_to_autonomous_releases_a_pending_turn(client, task_queue, start_worker, tmp_path) -> None:
    from durable_navigator.navcore.navigator.messages import SetModeInput

    provider = ScriptProvider(steps=[ZOOM_BUDGET, ZOOM_OUT_CLI])
    acts = make_activities(tmp_path, provider)
    req = make_request(tmp_path, mode=ExecutionMode.INTERACTIVE)
    async with start_worker(acts):
        handle = await client.start_workflow(
            NavigatorWorkflow.run, req, id=f"nav-{uuid.uuid4()}", task_queue=task_queue, execution_timeout=TIMEOUT
        )
        await wait_for(handle, lambda r: r.awaiting_turn == 1)
        await handle.signal(NavigatorWorkflow.set_mode, SetModeInput(sender="erin", mode=ExecutionMode.AUTONOMOUS))
        result: ExplorationResult = await handle.result()
        log = await handle.query(NavigatorWorkflow.get_decision_log)
    assert result.stop_reason is StopReason.FINALIZED and result.iterations == 3
    assert [e.verdict for e in log.entries] == ["approve", None, None]
