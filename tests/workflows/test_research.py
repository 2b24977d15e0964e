"""ResearchWorkflow against the real dev server: real activities (tools, aggregate, answer writing), scripted models.

The scripted model is the real ``scripted:<file>`` provider priced at $1 / $2 per million tokens
(``tests/support/batch.py``), so every budget figure below is real arithmetic.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

from temporalio.client import Client, WorkflowHistory

from durable_navigator.navcore.run.budget import usd_to_micros
from durable_navigator.navcore.navigator.report import DecisionLogView
from durable_navigator.navcore.research.research import ResearchResult
from durable_navigator.navcore.run.subagents import AgentProfile, ResearchCaps
from durable_navigator.workflows.research import ResearchWorkflow

from tests.support.batch import priced_activities
from tests.support.navigator import wait_for
from tests.support.research import (
    COST,
    FULL_LOOP,
    QUOTE,
    calls_answer,
    finish_answer,
    text_answer,
    research_request,
    start_research,
    wait_for_call_in_flight,
    write_research_script,
)

async def test_full_loop_two_rounds_failed_tool_finish(client: Client, task_queue: str, tmp_path: Path,
                                                       start_worker) -> None:
    model = write_research_script(tmp_path / "script.yaml", FULL_LOOP)
    async with start_worker(priced_activities(tmp_path)):
        handle = await start_research(client, task_queue, research_request(tmp_path, model=model))
        result: ResearchResult = await handle.result()
        view: DecisionLogView = await handle.query(ResearchWorkflow.get_decision_log)
    assert result.stop_reason.value == "finalized" and result.completed_normally
    assert (result.rounds, result.steps, result.iterations) == (2, 3, 5)
    actions = [e.action for e in view.entries]
    assert actions.count("research_plan") == 2 and actions.count("research_refine") == 2
    assert actions.count("aggregate") == 3 and actions[-1] == "research_answer"
    tool_turn = next(e for e in view.entries if e.action == "call_tools")
    assert tool_turn.error and "read_file" in tool_turn.error and "refused" in tool_turn.error  # the escape
    # the bogus finding was dropped by the aggregate step (its citation does not exist)
    first_agg = next(e for e in view.entries if e.action == "aggregate")
    assert any("nope.py" in d and "dropped" in d for d in first_agg.diff_lines)
    assert result.findings == 3
    # every call was priced: 2 plans + 5 turns + 2 refines + 1 answer, 1200 micro-USD each
    assert result.cost_micros == 10 * COST == sum(e.cost_micros for e in view.entries)
    answer = Path(result.answer_path or "").read_text()
    assert "src/budgetkit/plugin.py:26-29" in answer and "src/budgetkit/plugin.py:31-33" in answer
    # the citation check: no cited line that does not exist (nope.py removed, ledger.py:30-99 clamped)
    assert "nope.py" not in answer and "src/budgetkit/ledger.py:30-37" in answer
    report = json.loads(Path(result.report_path or "").read_text())
    fixed = {c["cited"]["path"]: c["verdict"] for c in report["citations"]["fixed"]}
    assert fixed == {"src/budgetkit/nope.py": "removed", "src/budgetkit/ledger.py": "clamped"}
    assert result.citations_fixed == 2 and report["completed_normally"] is True


def _helper(model: str, **kw) -> AgentProfile:  # type: ignore[no-untyped-def]
    base = dict(name="helper", kind="research", model=model, planning="direct", budget_share=Decimal("0.5"),
                caps=ResearchCaps(max_rounds=1, max_plan_steps=1, max_executor_turns=1, max_calls=10))
    base.update(kw)
    return AgentProfile(**base)


async def test_delegated_child_hits_its_limit_and_its_slice_flows_back(client: Client, task_queue: str,
                                                                      tmp_path: Path, start_worker) -> None:
    child_model = write_research_script(tmp_path / "child.yaml", {
        # one turn that only searches: the step's cap ends it; the refinery wants more, no round is left
        "research.execute": ["", calls_answer({"name": "search_codebase", "args": {"query": "ledger"}}, stall_s=1.5)],
        "research.refine": [text_answer("DECISION: CONTINUE\nMISSING: everything\nREASON: one search only")],
    })
    parent_model = write_research_script(tmp_path / "parent.yaml", {
        "research.plan": [text_answer('["ask the helper about the ledger"]')],
        "research.execute": ["", calls_answer({"name": "delegate", "args": {"profile": "helper", "task": "what is Ledger?"}}),
                             finish_answer(("Ledger keeps usage per model", "src/budgetkit/ledger.py:20-37"))],
        "research.refine": [text_answer("DECISION: FINISH\nREASON: enough")],
        "research.synthesize": [text_answer("Ledger keeps usage per model (src/budgetkit/ledger.py:20-37).")],
    })
    helper = _helper(child_model)
    req = research_request(tmp_path, model=parent_model, budget_usd=Decimal("0.1"),
                           profile=AgentProfile(name="researcher", may_delegate=True), profiles={"helper": helper})
    async with start_worker(priced_activities(tmp_path)):
        handle = await start_research(client, task_queue, req)
        # the child's events reach the parent while it runs
        live = await wait_for(handle, lambda r: bool(r.children) and r.children[0].events > 0
                              and r.children[0].completed_normally is None)
        result: ResearchResult = await handle.result()
        view: DecisionLogView = await handle.query(ResearchWorkflow.get_decision_log)
        child_result: ResearchResult = await client.get_workflow_handle(
            result.children[0].workflow_id, result_type=ResearchResult).result()
    assert live.children[0].status in {"thinking", "preparing", "scanning", "starting", "finalizing"}
    [child] = result.children
    assert child.completed_normally is False and child.stop_reason == "max_iterations"
    assert child_result.completed_normally is False and not child_result.findings
    # the slice: half of what the parent had left, reserved in its ledger, the unspent part returned
    assert child_result.max_usd == Decimal(child.slice_micros) / 1_000_000
    assert 0 < child.cost_micros == child_result.cost_micros < child.slice_micros
    assert child.cost_micros == 2 * COST  # the child's one turn and its refinery (direct planning: no plan call)
    # the parent's plan, delegate turn, finish turn, refinery and answer, plus what the child spent
    assert result.cost_micros == 5 * COST + child.cost_micros
    assert result.completed_normally and usd_to_micros(result.max_usd) == usd_to_micros(Decimal("0.1"))
    assert child.events > 0
    assert [c.workflow_id for c in view.children] == [child.workflow_id]  # `navigator log` lists them too
    done = next(e for e in view.entries if e.action == "subagent_done")
    assert "completed normally: no" in done.diff_lines[0] and child.workflow_id in done.diff_lines[0]


async def test_stop_mid_step_answers_with_the_findings_so_far(client: Client, task_queue: str, tmp_path: Path,
                                                              start_worker) -> None:
    model = write_research_script(tmp_path / "script.yaml", {
        "research.plan": [text_answer('["read the plugin", "read the ledger"]')],
        "research.execute": ["", finish_answer(("BudgetPlugin refuses calls past the limit", "src/budgetkit/plugin.py:13-24")),
                             calls_answer({"name": "list_directory", "args": {"path": "src"}}, stall_s=30)],
        "research.synthesize": [text_answer("The plugin refuses calls past its limit (src/budgetkit/plugin.py:13-24).")],
    })
    async with start_worker(priced_activities(tmp_path)):
        handle = await start_research(client, task_queue, research_request(tmp_path, model=model))
        # the stop must land while step 2's stalled turn is in flight: `step == 1 and status == "thinking"`
        # already holds from step 1's last turn on (aggregate, the next prepare), when nothing is in flight
        await wait_for(handle, lambda r: r.step == 1)
        await wait_for_call_in_flight(client, handle)
        await handle.signal(ResearchWorkflow.stop, _stop("enough"))
        result: ResearchResult = await handle.result()
        view: DecisionLogView = await handle.query(ResearchWorkflow.get_decision_log)
    assert result.stop_reason.value == "stopped" and not result.completed_normally
    assert result.findings == 1 and result.iterations == 1
    stopped = [e for e in view.entries if e.action == "stopped"]
    # the cancelled turn was booked with what it had consumed (the stalled scripted call reported its usage)
    assert stopped and stopped[0].cost_micros == COST
    answer = Path(result.answer_path or "").read_text()
    assert "src/budgetkit/plugin.py:13-24" in answer and "ended early: stopped" in answer
    assert result.cost_micros == sum(e.cost_micros for e in view.entries)


def _stop(reason: str):  # type: ignore[no-untyped-def]
    from durable_navigator.navcore.navigator.messages import StopInput

    return StopInput(reason=reason, sender="test")


async def test_findings_and_quotes_stay_out_of_history(client: Client, task_queue: str, tmp_path: Path,
                                                       start_worker) -> None:
    """Findings, tool output and answers are artifacts: history holds references and short previews."""
    model = write_research_script(tmp_path / "script.yaml", FULL_LOOP)
    async with start_worker(priced_activities(tmp_path)):
        handle = await start_research(client, task_queue, research_request(tmp_path, model=model))
        result: ResearchResult = await handle.result()
        history: WorkflowHistory = await handle.fetch_history()
    assert QUOTE in Path(result.answer_path or "").read_text()
    text = history.to_json()
    assert "QUOTE-MARKER-7f3a" not in text
    assert "research.aggregate" in text and "research.write_answer" in text


async def test_continue_as_new_carries_the_whole_state(client: Client, task_queue: str, tmp_path: Path,
                                                       start_worker) -> None:
    model = write_research_script(tmp_path / "script.yaml", FULL_LOOP)
    req = research_request(tmp_path, model=model, continue_as_new_events=50)
    async with start_worker(priced_activities(tmp_path)):
        handle = await start_research(client, task_queue, req)
        result: ResearchResult = await handle.result()
    # the same run as without continue-as-new: rounds, steps, turns, findings, cost
    assert result.continued_runs >= 1
    assert (result.rounds, result.steps, result.iterations, result.findings) == (2, 3, 5, 3)
    assert result.cost_micros == 10 * COST and result.completed_normally
