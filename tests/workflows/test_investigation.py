"""InvestigationWorkflow against the real dev server, the orchestrator scripted, its workers offline.

Scripted answers are keyed by kind and by the how-many-th call of that kind in the run (plan review
and stage review share the ``investigate.review`` counter, in run order).
"""

from __future__ import annotations

import asyncio
import json
from decimal import Decimal
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowUpdateFailedError

from durable_navigator.navcore.investigation.investigation import InvestigationResult, InvestigationState
from durable_navigator.navcore.navigator.messages import RejectInput, StopInput, VerdictInput
from durable_navigator.navcore.navigator.state import ExecutionMode
from durable_navigator.workflows.investigation import InvestigationWorkflow

from tests.support.batch import priced_activities
from tests.support.investigation import (
    investigation_request,
    js,
    stage,
    start_investigation,
    worker_profile,
    write_investigation_script,
)
from tests.support.navigator import wait_for
from tests.support.research import COST, finish_answer, text_answer, write_research_script

PLAN = [stage("the plugin", "after_call is found", "a missing file is cited"),
        stage("the ledger", "Ledger.record is found"),
        stage("the tests", "a test of the plugin is found")]


def _full_script(tmp_path: Path) -> str:
    return write_investigation_script(tmp_path / "orchestrator.yaml", {
        "investigate.plan": [js({"stages": PLAN[:2]}), js({"stages": PLAN})],
        "investigate.review": [js({"critique": "the tests are not covered"}), js({"critique": "good now"}),
                               js({"critique": "after_call is cited; find more"}), js({"critique": "enough"}),
                               js({"critique": "ledger found"})],
        "investigate.confirm": [js({"exit": False, "reason": "add a stage for the tests"}),
                                js({"exit": True, "reason": "covers the goal"}),
                                js({"exit": False, "reason": "loop once more"}),
                                js({"exit": True, "reason": "done"}), js({"exit": True, "reason": "done"})],
        "investigate.criteria": [
            js({"criteria": [
                {"criterion": "after_call is found", "met": True, "evidence": ["src/budgetkit/plugin.py:26-29"]},
                {"criterion": "a missing file is cited", "met": True, "evidence": ["src/budgetkit/nope.py:1-2"]}]}),
            js({"criteria": [{"criterion": "Ledger.record is found", "met": True,
                              "evidence": ["src/budgetkit/ledger.py:20-30"]}]})],
        "investigate.reflect": [js({"drop": [2], "reason": "the plugin's tests were read in stage 0"})],
        "investigate.compress": [js({"record": "after_call records usage (src/budgetkit/plugin.py:26-29)"}),
                                 js({"record": "Ledger.record appends (src/budgetkit/ledger.py:20-30)"})],
    })


async def test_plan_rejected_then_accepted_stage_loops_criteria_evidence_and_a_dropped_stage(
        client: Client, task_queue: str, tmp_path: Path, start_worker) -> None:
    req = investigation_request(tmp_path, model=_full_script(tmp_path), max_stages=3)
    async with start_worker(priced_activities(tmp_path)):
        handle = await start_investigation(client, task_queue, req)
        result: InvestigationResult = await handle.result()
        state: InvestigationState = await handle.query(InvestigationWorkflow.get_investigation)
    # planning: round 1 rejected (no failure), round 2 accepted
    assert [r.exit for r in state.plan_rounds] == [False, True]
    assert state.plan_rounds[0].critique == "the tests are not covered"
    assert result.plan_rounds == 2 and result.completed_normally
    s0, s1, s2 = state.stages
    # stage 0 looped twice in review (or stopped early as a detected loop), each loop a new worker child
    assert s0.loops == 2 and len(s0.children) == 2
    # criteria: one met with evidence that exists, one claimed met on a missing file → not met
    met, missing = s0.criteria_status
    assert met.met and met.evidence == ["src/budgetkit/plugin.py:26-29"]
    assert not missing.met and missing.evidence == [] and "nope.py" in missing.dropped[0]
    assert "not met" in missing.note
    # the reflection dropped stage 2, with its reason
    assert s2.status == "dropped" and "stage 0" in s2.reflection
    assert "dropped [2]" in s0.reflection
    assert s1.status == "done" and s1.criteria_status[0].met
    assert result.stages_done == 2 and result.criteria_met == 2 and result.criteria_total == 3
    # every orchestrator call is priced (the workers are offline: free); the children are on slices
    calls = sum(state.calls.values())
    assert result.cost_micros == calls * COST
    assert all(c.slice_micros > 0 and c.cost_micros == 0 for c in result.children)
    report = Path(result.report_path or "").read_text()
    assert "- [x] after_call is found — src/budgetkit/plugin.py:26-29" in report
    assert "- [!] a missing file is cited — no evidence" in report and "## Open questions" in report
    data = json.loads(Path(result.report_json_path or "").read_text())
    assert data["evidence"]["dropped"] == 1 and data["criteria_met"] == 2


async def test_a_worker_that_times_out_is_reported_and_charged_its_slice(
        client: Client, task_queue: str, tmp_path: Path, start_worker) -> None:
    slow = write_research_script(tmp_path / "slow.yaml", {
        "research.plan": [{"text": '["read the plugin"]', "stall_s": 60}]})
    orchestrator = write_investigation_script(tmp_path / "orch.yaml", {
        "investigate.plan": [js({"stages": PLAN[:1]})],
        "investigate.review": [js({"critique": "fine"}), js({"critique": "nothing was found"})],
        "investigate.confirm": [js({"exit": True, "reason": "ok"}), js({"exit": True, "reason": "move on"})],
        "investigate.criteria": [js({"criteria": [{"criterion": "after_call is found", "met": False},
                                                  {"criterion": "a missing file is cited", "met": False}]})],
    })
    req = investigation_request(tmp_path, model=orchestrator, max_stages=1, max_stage_loops=1,
                                worker=worker_profile(model=slow, timeout_s=3))
    async with start_worker(priced_activities(tmp_path)):
        result = await (await start_investigation(client, task_queue, req)).result()
    [child] = result.children
    assert child.completed_normally is False and child.stop_reason == "timed_out"
    assert child.cost_micros == child.slice_micros > 0  # unknown spend: the whole slice is charged
    assert result.cost_micros <= int(req.budget_usd * 1_000_000)
    report = Path(result.report_path or "").read_text()
    assert "Worker problem:" in report and "timed_out" in report


async def test_stop_mid_stage_stops_the_worker_and_writes_the_report(
        client: Client, task_queue: str, tmp_path: Path, start_worker) -> None:
    child_script = write_research_script(tmp_path / "child.yaml", {
        "research.plan": [text_answer('["read the ledger", "list the sources"]')],
        "research.execute": ["", finish_answer(("Ledger.record appends usage", "src/budgetkit/ledger.py:20-30")),
                             {"calls": [{"name": "list_directory", "args": {"path": "src"}}], "stall_s": 30}],
        "research.synthesize": [text_answer("Ledger.record appends usage (src/budgetkit/ledger.py:20-30).")],
    })
    orchestrator = write_investigation_script(tmp_path / "orch.yaml", {
        "investigate.plan": [js({"stages": PLAN[:2]})],
        "investigate.review": [js({"critique": "fine"})],
        "investigate.confirm": [js({"exit": True, "reason": "ok"})],
    })
    req = investigation_request(tmp_path, model=orchestrator, worker=worker_profile(model=child_script))
    async with start_worker(priced_activities(tmp_path)):
        handle = await start_investigation(client, task_queue, req)
        # the worker's first turn is in (one finding); its second turn stalls for 30 s
        await wait_for(handle, lambda r: any(c.iteration >= 1 and c.completed_normally is None for c in r.children),
                       timeout_s=60)
        await asyncio.sleep(1.0)
        await handle.signal(InvestigationWorkflow.stop, StopInput(reason="enough for today", sender="test"))
        result: InvestigationResult = await handle.result()
        state: InvestigationState = await handle.query(InvestigationWorkflow.get_investigation)
    assert result.stop_reason.value == "stopped" and not result.completed_normally
    [child] = result.children
    assert child.stop_reason == "stopped" and child.completed_normally is False
    s0, s1 = state.stages
    assert s0.status == "stopped" and s0.findings == 1  # the stopped worker's findings are kept
    assert s1.status == "skipped"
    report = Path(result.report_path or "").read_text()
    assert "Ledger.record appends usage" in report and "did not run" in report


async def test_branch_and_compare_keeps_the_branch_covering_more_of_the_goal(
        client: Client, task_queue: str, tmp_path: Path, start_worker) -> None:
    weak = write_research_script(tmp_path / "weak.yaml", {
        "research.plan": [text_answer('["look around"]')],
        "research.execute": ["", finish_answer(("the package has a README", "README.md:1-2"))],
        "research.refine": [text_answer("DECISION: FINISH\nREASON: done")],
        "research.synthesize": [text_answer("A README (README.md:1-2).")],
    })
    strong = write_research_script(tmp_path / "strong.yaml", {
        "research.plan": [text_answer('["read the plugin"]')],
        "research.execute": ["", finish_answer(("the budget plugin records usage in the ledger",
                                                "src/budgetkit/plugin.py:26-29"))],
        "research.refine": [text_answer("DECISION: FINISH\nREASON: done")],
        "research.synthesize": [text_answer("The plugin records usage (src/budgetkit/plugin.py:26-29).")],
    })
    orchestrator = write_investigation_script(tmp_path / "orch.yaml", {
        "investigate.plan": [js({"stages": [stage("the plugin", "after_call is found", branches=2)]})],
        "investigate.review": [js({"critique": "fine"}), js({"critique": "fine"})],
        "investigate.confirm": [js({"exit": True, "reason": "ok"}), js({"exit": True, "reason": "ok"})],
        "investigate.criteria": [js({"criteria": [{"criterion": "after_call is found", "met": True,
                                                   "evidence": ["src/budgetkit/plugin.py:26-29"]}]})],
    })
    req = investigation_request(
        tmp_path, model=orchestrator, max_stages=1, max_stage_loops=1, budget_usd=Decimal("1"),
        profiles={"stage-worker-branch1": worker_profile("stage-worker-branch1", model=weak),
                  "stage-worker-branch2": worker_profile("stage-worker-branch2", model=strong)})
    async with start_worker(priced_activities(tmp_path)):
        handle = await start_investigation(client, task_queue, req)
        result = await handle.result()
        state: InvestigationState = await handle.query(InvestigationWorkflow.get_investigation)
    [s0] = state.stages
    assert len(result.children) == 2 and len(s0.branch_scores) == 2
    weak_b, strong_b = s0.branch_scores
    assert strong_b.covered > weak_b.covered and strong_b.kept and not weak_b.kept
    assert s0.findings == 1  # only the kept branch's findings are merged
    # the two slices were split evenly from the same stage share and both came back (scripted children cost)
    slices = [c.slice_micros for c in result.children]
    assert abs(slices[0] - slices[1]) <= 2
    assert result.cost_micros <= int(req.budget_usd * 1_000_000)


async def test_interactive_plan_rejected_with_feedback_is_replanned_then_approved_through_the_update(
        client: Client, task_queue: str, tmp_path: Path, start_worker) -> None:
    orchestrator = write_investigation_script(tmp_path / "orch.yaml", {
        "investigate.plan": [js({"stages": PLAN[1:2]}), js({"stages": PLAN[:1]})],
        "investigate.review": [js({"critique": "fine"}), js({"critique": "fine"}), js({"critique": "ok"})],
        "investigate.confirm": [js({"exit": True, "reason": "ok"}), js({"exit": True, "reason": "ok"}),
                                js({"exit": True, "reason": "ok"})],
        "investigate.criteria": [js({"criteria": [
            {"criterion": "after_call is found", "met": True, "evidence": ["src/budgetkit/plugin.py:26-29"]},
            {"criterion": "a missing file is cited", "met": False}]})],
    })
    req = investigation_request(tmp_path, model=orchestrator, max_stage_loops=1, mode=ExecutionMode.INTERACTIVE)
    async with start_worker(priced_activities(tmp_path)):
        handle = await start_investigation(client, task_queue, req)
        first = await wait_for(handle, lambda r: r.awaiting_kind == "plan", timeout_s=60)
        assert "the ledger" in (first.stage_plan or "")
        await handle.signal(InvestigationWorkflow.reject, RejectInput(turn=first.awaiting_turn or 0, kind="plan",
                                                                      feedback="start with the plugin", sender="t"))
        second = await wait_for(handle, lambda r: r.awaiting_kind == "plan" and "the plugin" in (r.stage_plan or ""),
                                timeout_s=60)
        # the CLI's path: the submit_verdict update; its validator refuses what the run would ignore
        for stale in (VerdictInput(verdict="approve", turn=first.awaiting_turn or 0, kind="plan", sender="t"),
                      VerdictInput(verdict="approve", turn=second.awaiting_turn or 0, kind="turn", sender="t")):
            with pytest.raises(WorkflowUpdateFailedError):
                await handle.execute_update(InvestigationWorkflow.submit_verdict, stale)
        outcome = await handle.execute_update(
            InvestigationWorkflow.submit_verdict,
            VerdictInput(verdict="approve", turn=second.awaiting_turn or 0, kind="plan", sender="t"))
        assert outcome.applied and "stage plan" in outcome.detail
        result: InvestigationResult = await handle.result()
        state: InvestigationState = await handle.query(InvestigationWorkflow.get_investigation)
    assert result.completed_normally and [s.title for s in state.stages] == ["the plugin"]
    assert any("rejected by the user: start with the plugin" in r.reason for r in state.plan_rounds)
    assert state.calls["investigate.plan"] == 2


async def test_the_budget_is_a_hard_cap_and_an_exhausted_run_still_writes_its_report(
        client: Client, task_queue: str, tmp_path: Path, start_worker) -> None:
    many = [stage(f"stage {i}", f"criterion {i}") for i in range(4)]
    orchestrator = write_investigation_script(tmp_path / "orch.yaml", {
        "investigate.plan": [js({"stages": many})],
        "investigate.review": [js({"critique": "fine"})] * 12,
        "investigate.confirm": [js({"exit": True, "reason": "ok"})] * 12,
        "investigate.criteria": [js({"criteria": [{"criterion": f"criterion {i}", "met": False}]}) for i in range(4)],
        "investigate.reflect": [js({"drop": [], "reason": "keep"})] * 4,
    })
    req = investigation_request(tmp_path, model=orchestrator, max_stages=4, max_stage_loops=1,
                                budget_usd=Decimal("0.012"), max_output_tokens=1024)
    async with start_worker(priced_activities(tmp_path)):
        result: InvestigationResult = await (await start_investigation(client, task_queue, req)).result()
    assert result.stop_reason.value == "budget_exhausted" and not result.completed_normally
    assert 0 < result.cost_micros <= 12_000
    assert Path(result.report_path or "").is_file()
    assert "budget_exhausted" in Path(result.report_path or "").read_text()
