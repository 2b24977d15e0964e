"""Subagents of a research run: a navigator child, a stop and a cancel of the parent reaching its child."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowFailureError
from temporalio.exceptions import CancelledError

from durable_navigator.navcore.navigator.messages import StopInput
from durable_navigator.navcore.navigator.report import DecisionLogView
from durable_navigator.navcore.navigator.requests import ExplorationResult
from durable_navigator.navcore.research.research import ResearchResult
from durable_navigator.navcore.run.subagents import AgentProfile, ResearchCaps
from durable_navigator.workflows.research import ResearchWorkflow

from tests.support.batch import priced_activities
from tests.support.navigator import wait_for
from tests.support.research import research_request, start_research, write_research_script
from tests.support.research import COST, calls_answer, finish_answer, text_answer

NAVIGATOR = AgentProfile(name="navigator", kind="navigate", model="offline", planning="direct", max_iterations=3,
                         token_budget=2000, budget_share=Decimal("0.5"))


async def test_navigate_runs_a_navigator_child_that_reports_while_it_runs(client: Client, task_queue: str,
                                                                          tmp_path: Path, start_worker) -> None:
    model = write_research_script(tmp_path / "parent.yaml", {
        "research.plan": [text_answer('["get a context pack for the plugin"]')],
        "research.execute": ["", calls_answer({"name": "navigate", "args": {"goal": "the budget plugin's usage recording"}}),
                             finish_answer(("after_call records usage", "src/budgetkit/plugin.py:26-29"))],
        "research.refine": [text_answer("DECISION: FINISH\nREASON: enough")],
        "research.synthesize": [text_answer("after_call records usage (src/budgetkit/plugin.py:26-29).")],
    })
    req = research_request(tmp_path, model=model, profile=AgentProfile(name="researcher", may_delegate=True),
                           profiles={"navigator": NAVIGATOR})
    async with start_worker(priced_activities(tmp_path)):
        handle = await start_research(client, task_queue, req)
        result: ResearchResult = await handle.result()
        [child] = result.children
        child_handle = client.get_workflow_handle(child.workflow_id, result_type=ExplorationResult)
        explored: ExplorationResult = await child_handle.result()
        memo = await (await child_handle.describe()).memo()
        view: DecisionLogView = await handle.query(ResearchWorkflow.get_decision_log)
    assert child.kind == "navigate" and child.profile == "navigator"
    # the NavigatorWorkflow child reported through its own publisher (the subagent memo asked it to)
    assert child.events > 0 and memo["subagent"]["parent"] == handle.id
    assert child.result_path == explored.context_path and Path(explored.context_path or "").is_file()
    assert child.completed_normally == (explored.stop_reason.value == "finalized")
    assert explored.cost_micros == 0 == child.cost_micros  # offline is free; the slice came back whole
    assert result.cost_micros == 5 * COST
    navigate = next(e for e in view.entries if e.action == "navigate")
    assert "navigator" in navigate.diff_lines[0]


def _slow_child(tmp_path: Path) -> AgentProfile:
    child_model = write_research_script(tmp_path / "child.yaml", {
        "research.execute": ["", finish_answer(("Ledger.record appends usage", "src/budgetkit/ledger.py:20-30")),
                             calls_answer({"name": "list_directory", "args": {"path": "src"}}, stall_s=30)],
        "research.synthesize": [text_answer("Ledger.record appends usage (src/budgetkit/ledger.py:20-30).")],
    })
    return AgentProfile(name="helper", kind="research", model=child_model, budget_share=Decimal("0.5"),
                        caps=ResearchCaps(max_rounds=1, max_plan_steps=2, max_executor_turns=2, max_calls=10),
                        planning="auto")


def _parent_script(tmp_path: Path) -> str:
    return write_research_script(tmp_path / "parent.yaml", {
        "research.plan": [text_answer('[{"step": "what does the ledger record?", "profile": "helper"}]')],
        "research.synthesize": [text_answer("Ledger.record appends usage (src/budgetkit/ledger.py:20-30).")],
    })


def _child_plan(tmp_path: Path) -> None:
    # the child plans two steps: the first finishes, the second stalls
    path = tmp_path / "child.yaml"
    import yaml

    data = yaml.safe_load(path.read_text())
    data["text"]["research.plan"] = [text_answer('["read Ledger.record", "list the sources"]')]
    path.write_text(yaml.safe_dump(data, sort_keys=False))


async def test_stopping_the_parent_stops_its_child_which_finalizes(client: Client, task_queue: str, tmp_path: Path,
                                                                   start_worker) -> None:
    helper = _slow_child(tmp_path)
    _child_plan(tmp_path)
    req = research_request(tmp_path, model=_parent_script(tmp_path), profiles={"helper": helper})
    async with start_worker(priced_activities(tmp_path)):
        handle = await start_research(client, task_queue, req)
        report = await wait_for(handle, lambda r: bool(r.children) and r.children[0].iteration >= 1
                                and r.children[0].status == "thinking", timeout_s=60)
        await handle.signal(ResearchWorkflow.stop, StopInput(reason="enough", sender="test"))
        result: ResearchResult = await handle.result()
        child_result: ResearchResult = await client.get_workflow_handle(
            report.children[0].workflow_id, result_type=ResearchResult).result()
    # the child got the stop, cancelled its call in flight and wrote its answer from what it had
    assert child_result.stop_reason.value == "stopped" and not child_result.completed_normally
    assert "parent: enough" in (child_result.stop_detail or "")
    assert child_result.findings == 1 and Path(child_result.answer_path or "").is_file()
    [child] = result.children
    assert child.completed_normally is False and child.cost_micros == child_result.cost_micros
    # the parent merged the child's finding and answered with it
    assert result.stop_reason.value == "stopped" and result.findings == 1
    assert "src/budgetkit/ledger.py:20-30" in Path(result.answer_path or "").read_text()


async def test_cancelling_the_parent_stops_its_child_which_finalizes(client: Client, task_queue: str, tmp_path: Path,
                                                                     start_worker) -> None:
    helper = _slow_child(tmp_path)
    _child_plan(tmp_path)
    req = research_request(tmp_path, model=_parent_script(tmp_path), profiles={"helper": helper})
    async with start_worker(priced_activities(tmp_path)):
        handle = await start_research(client, task_queue, req)
        report = await wait_for(handle, lambda r: bool(r.children) and r.children[0].iteration >= 1
                                and r.children[0].status == "thinking", timeout_s=60)
        await handle.cancel()
        with pytest.raises(WorkflowFailureError) as failure:
            await handle.result()
        child_result: ResearchResult = await client.get_workflow_handle(
            report.children[0].workflow_id, result_type=ResearchResult).result()
    assert isinstance(failure.value.cause, CancelledError)
    assert child_result.stop_reason.value == "stopped" and "cancelled" in (child_result.stop_detail or "")
    assert Path(child_result.answer_path or "").is_file()
    await asyncio.sleep(0)
