"""A stop that lands between two model calls of a research step: nothing is in flight, nothing is cancelled.

The interleavings ``test_stop_mid_step_answers_with_the_findings_so_far`` hit under load when it
waited only for ``status == "thinking"``: the stop arrived while step 1's findings were aggregated, or
while step 2's first turn was being prepared, so step 2's model call was never made. Each is pinned
here by holding that activity until the stop is in history (the signal event then precedes the
activity's completion, so the workflow sees the stop first on every run).

What the run promises then: the stop ends it with the findings so far; the stop is noted (``notes``);
the turn that never ran is neither called nor booked, so there is no ``stopped`` decision entry (that
entry books a call a stop cancelled, as in the navigator) and the cost is the calls that ran.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from temporalio import activity
from temporalio.client import Client

from durable_navigator.activities.model_calls import ModelCallActivities
from durable_navigator.activities.research import ResearchActivities
from durable_navigator.navcore.navigator.messages import StopInput
from durable_navigator.navcore.navigator.model_calls import PreparedCall, PrepareInput
from durable_navigator.navcore.navigator.report import DecisionLogView
from durable_navigator.navcore.research.research import AggregateInput, AggregateOutput, ResearchResult
from durable_navigator.workflows.research import ResearchWorkflow

from tests.support.batch import priced_activities
from tests.support.research import (
    COST,
    calls_answer,
    finish_answer,
    research_request,
    start_research,
    text_answer,
    write_research_script,
)

SCRIPT = {
    "research.plan": [text_answer('["read the plugin", "read the ledger"]')],
    "research.execute": ["", finish_answer(("BudgetPlugin refuses calls past the limit", "src/budgetkit/plugin.py:13-24")),
                         # step 2's turn: never requested when the stop lands before it
                         calls_answer({"name": "list_directory", "args": {"path": "src"}}, stall_s=30)],
    "research.synthesize": [text_answer("The plugin refuses calls past its limit (src/budgetkit/plugin.py:13-24).")],
}


class _Gate:
    """Holds one activity execution until released; ``entered`` is set when it is held."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def hold(self) -> None:
        self.entered.set()
        await self.release.wait()


def _held_aggregate(real: ResearchActivities, gate: _Gate) -> Any:
    @activity.defn(name="research.aggregate")
    async def aggregate(inp: AggregateInput) -> AggregateOutput:
        await gate.hold()  # the one aggregation of the run: step 1's findings
        return await real.aggregate(inp)

    return aggregate


def _held_prepare(real: ModelCallActivities, gate: _Gate) -> Any:
    @activity.defn(name="model.prepare")
    async def prepare(inp: PrepareInput) -> PreparedCall:
        if inp.spec.kind == "research.execute" and getattr(inp.spec, "step_index", 0) == 1:
            await gate.hold()  # step 2's first turn
        return await real.prepare(inp)

    return prepare


@pytest.mark.parametrize("held", ["research.aggregate", "model.prepare"])
async def test_stop_between_calls_ends_the_step_without_calling_or_booking_its_turn(
        client: Client, task_queue: str, tmp_path: Path, start_worker, held: str) -> None:
    model = write_research_script(tmp_path / "script.yaml", SCRIPT)
    acts = priced_activities(tmp_path)
    gate = _Gate()
    if held == "research.aggregate":
        fake = _held_aggregate(ResearchActivities(acts.store, acts.engine), gate)
    else:
        fake = _held_prepare(ModelCallActivities(acts.store, pricer=acts.pricer, registry=acts.models,
                                                 engines=acts.engine, token_counter=acts.count_tokens), gate)
    async with start_worker(acts, extra_activities=[fake]):
        handle = await start_research(client, task_queue, research_request(tmp_path, model=model))
        await asyncio.wait_for(gate.entered.wait(), timeout=60)
        await handle.signal(ResearchWorkflow.stop, StopInput(reason="enough", sender="test"))
        gate.release.set()
        result: ResearchResult = await handle.result()
        view: DecisionLogView = await handle.query(ResearchWorkflow.get_decision_log)
        history = await handle.fetch_history()
    assert result.stop_reason.value == "stopped" and not result.completed_normally
    assert result.stop_detail == "enough (by test)"
    assert result.findings == 1 and result.iterations == 1  # step 1's finding stands
    requests = [e for e in history.events if e.HasField("activity_task_scheduled_event_attributes")
                and e.activity_task_scheduled_event_attributes.activity_type.name == "model.request"]
    assert len(requests) == 3  # the plan, step 1's turn, the answer: step 2's turn was never requested
    actions = [e.action for e in view.entries]
    assert actions == ["research_plan", "finish_step", "aggregate", "research_answer"]
    assert "stopped" not in actions  # nothing was cancelled, so nothing is booked as stopped
    assert [(n.kind, n.sender) for n in view.notes if n.kind == "stop"] == [("stop", "test")]
    assert result.cost_micros == 3 * COST == sum(e.cost_micros for e in view.entries)
    answer = Path(result.answer_path or "").read_text()
    assert "src/budgetkit/plugin.py:13-24" in answer and "ended early: stopped" in answer
