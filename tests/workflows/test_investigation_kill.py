"""An investigation survives SIGKILL of its worker mid-stage: nothing the orchestrator paid for is paid again.

The worker runs in a subprocess (``tests.support.rel_worker``: every model call slowed so the kill
lands while the stage's worker child has a call in flight); it is killed and started again. The run
completes; its history shows each orchestrator call and each worker child started exactly once.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import timedelta
from pathlib import Path

from temporalio.client import Client

from durable_navigator.navcore.investigation.investigation import InvestigationResult, InvestigationState
from durable_navigator.navcore.navigator.report import TurnReport
from durable_navigator.navcore.navigator.requests import ModelCallConfig
from durable_navigator.workflows.investigation import InvestigationWorkflow

from tests.support.investigation import investigation_request, js, stage, worker_profile, write_investigation_script
from tests.support.research import COST, finish_answer, text_answer, write_research_script
from tests.workflows.test_kill_restart import kill, spawn_worker
from tests.workflows.test_replay import _scheduled


async def _wait_child_thinking(client: Client, wid: str, timeout_s: float = 90) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while asyncio.get_running_loop().time() < deadline:
        try:
            report = await client.get_workflow_handle(wid).query(InvestigationWorkflow.get_status)
        except Exception:  # noqa: BLE001 - no worker has picked the run up yet
            await asyncio.sleep(0.1)
            continue
        assert isinstance(report, TurnReport)
        if any(c.completed_normally is None and c.iteration >= 1 for c in report.children):
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the stage's worker never got going")


async def test_investigation_survives_worker_sigkill_mid_stage(client: Client, task_queue: str, tmp_path: Path) -> None:
    target = client.service_client.config.target_host
    artifacts, log = tmp_path / "artifacts", tmp_path / "worker.log"
    child = write_research_script(tmp_path / "child.yaml", {
        "research.plan": [text_answer('["read the plugin", "read the ledger"]')],
        "research.execute": ["", finish_answer(("after_call records usage", "src/budgetkit/plugin.py:26-29")),
                             finish_answer(("Ledger.record appends usage", "src/budgetkit/ledger.py:20-30"))],
        "research.refine": [text_answer("DECISION: FINISH\nREASON: both")],
        "research.synthesize": [text_answer("after_call records usage (src/budgetkit/plugin.py:26-29).")],
    })
    orchestrator = write_investigation_script(tmp_path / "orch.yaml", {
        "investigate.plan": [js({"stages": [stage("the plugin", "after_call is found")]})],
        "investigate.review": [js({"critique": "fine"}), js({"critique": "found"})],
        "investigate.confirm": [js({"exit": True, "reason": "ok"}), js({"exit": True, "reason": "done"})],
        "investigate.criteria": [js({"criteria": [{"criterion": "after_call is found", "met": True,
                                                   "evidence": ["src/budgetkit/plugin.py:26-29"]}]})],
        "investigate.compress": [js({"record": "after_call records usage (src/budgetkit/plugin.py:26-29)"})],
    })
    req = investigation_request(tmp_path, model=orchestrator, max_stages=1, max_stage_loops=1,
                                worker=worker_profile(model=child),
                                model_call=ModelCallConfig(max_attempts=5, heartbeat_s=2, start_to_close_s=30,
                                                           initial_interval_s=0.2))
    wid = "investigation-kill-test"
    first = await asyncio.to_thread(spawn_worker, target, task_queue, artifacts, log)
    try:
        handle = await client.start_workflow(InvestigationWorkflow.run, req, id=wid, task_queue=task_queue,
                                             execution_timeout=timedelta(seconds=240))
        await _wait_child_thinking(client, wid)
    finally:
        kill(first)
    second = await asyncio.to_thread(spawn_worker, target, task_queue, artifacts, log)
    try:
        result: InvestigationResult = await handle.result()
        state: InvestigationState = await handle.query(InvestigationWorkflow.get_investigation)
        history = await handle.fetch_history()
    finally:
        kill(second)
    assert result.completed_normally and result.stages_done == 1 and result.criteria_met == 1
    # one worker child, started once; the orchestrator's calls each prepared once and run once
    starts = [e for e in history.events if e.HasField("start_child_workflow_execution_initiated_event_attributes")]
    assert len(starts) == 1 and len(result.children) == 1
    prepared = Counter(inp["spec"]["kind"] for inp in _scheduled(history, "model.prepare"))
    assert prepared == Counter(state.calls) == Counter({"investigate.plan": 1, "investigate.review": 2,
                                                       "investigate.confirm": 2, "investigate.criteria": 1,
                                                       "investigate.compress": 1})
    assert len(_scheduled(history, "model.request")) == sum(state.calls.values())
    # the orchestrator paid each of its calls once; the child's spend (its lost attempt booked at its
    # upper bound, so never under-counted) is on top and within its slice
    [c] = result.children
    assert result.cost_micros == sum(state.calls.values()) * COST + c.cost_micros
    assert 5 * COST <= c.cost_micros <= c.slice_micros
    assert log.stat().st_size > 0
