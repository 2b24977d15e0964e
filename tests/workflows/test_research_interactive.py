"""Interactive research: the plan and each step's findings wait for a verdict (real server, scripted model)."""

from __future__ import annotations

from pathlib import Path

from temporalio.client import Client

from durable_navigator.navcore.navigator.messages import ApproveInput, RejectInput
from durable_navigator.navcore.navigator.report import DecisionLogView
from durable_navigator.navcore.research.research import ResearchResult, ResearchView
from durable_navigator.navcore.navigator.state import ExecutionMode
from durable_navigator.workflows.research import ResearchWorkflow

from tests.support.batch import priced_activities
from tests.support.navigator import wait_for
from tests.support.research import research_request, start_research, write_research_script
from tests.support.research import finish_answer, text_answer


async def test_plan_rejected_then_approved_and_a_rejected_step_drops_its_findings(
        client: Client, task_queue: str, tmp_path: Path, start_worker) -> None:
    model = write_research_script(tmp_path / "script.yaml", {
        "research.plan": [text_answer('["read the plugin", "read the ledger"]')],
        "research.execute": ["", finish_answer(("BudgetPlugin refuses calls past the limit", "src/budgetkit/plugin.py:21-24")),
                             finish_answer(("Ledger sums tokens per model", "src/budgetkit/ledger.py:34-37"))],
        "research.refine": [text_answer("DECISION: FINISH\nREASON: the plugin is the answer")],
        "research.synthesize": [text_answer("The plugin refuses calls past its limit (src/budgetkit/plugin.py:21-24).")],
    })
    req = research_request(tmp_path, model=model, mode=ExecutionMode.INTERACTIVE)
    async with start_worker(priced_activities(tmp_path)):
        handle = await start_research(client, task_queue, req)
        await wait_for(handle, lambda r: r.awaiting_kind == "plan" and r.awaiting_turn == 1)
        await handle.signal(ResearchWorkflow.reject, RejectInput(turn=1, kind="plan", feedback="start with the plugin",
                                                                 sender="test"))
        # the re-plan waits for its own verdict (a second plan entry in the log)
        await wait_for(handle, lambda r: r.awaiting_kind == "plan" and r.decisions >= 2)
        await handle.signal(ResearchWorkflow.approve, ApproveInput(turn=1, kind="plan", sender="test"))
        await wait_for(handle, lambda r: r.awaiting_kind == "turn" and r.awaiting_turn == 3)
        # a verdict for another step is stale: ignored and noted, never applied to step 3
        await handle.signal(ResearchWorkflow.approve, ApproveInput(turn=4, kind="turn", sender="test"))
        await handle.signal(ResearchWorkflow.approve, ApproveInput(turn=3, kind="turn", sender="test"))
        await wait_for(handle, lambda r: r.awaiting_kind == "turn" and r.awaiting_turn == 4)
        await handle.signal(ResearchWorkflow.reject, RejectInput(turn=4, kind="turn", feedback="not the ledger",
                                                                 sender="test"))
        result: ResearchResult = await handle.result()
        view: DecisionLogView = await handle.query(ResearchWorkflow.get_decision_log)
        research: ResearchView = await handle.query(ResearchWorkflow.get_research)
    assert [st.status for st in research.steps] == ["rejected", "rejected", "done", "rejected"]
    assert [st.verdict for st in research.steps] == ["reject", "reject", "approve", "reject"]
    # only the approved step's finding is left
    assert result.findings == 1 and research.findings.files == ["src/budgetkit/plugin.py"]
    plans = [e for e in view.entries if e.action == "research_plan"]
    assert [p.verdict for p in plans] == ["reject", "approve"] and plans[0].feedback == "start with the plugin"
    assert any("ignored: turn 4 is not awaiting a verdict" in n.note and n.turn == 4 for n in view.notes)
    assert result.completed_normally
    answer = Path(result.answer_path or "").read_text()
    assert "src/budgetkit/plugin.py:21-24" in answer and "ledger.py:34-37" not in answer
