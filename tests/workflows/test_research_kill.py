"""A research run survives SIGKILL of its worker mid-step: nothing re-paid, no tool call run twice.

The worker runs in a subprocess (``tests.support.rel_worker``: the real providers, every model call
slowed so the kill lands while one is in flight); it is killed during an executor turn and started
again. The run then completes, and its decision log, its ledger and its history are checked.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

from temporalio.client import Client

from durable_navigator.navcore.navigator.report import DecisionLogView, TurnReport
from durable_navigator.navcore.navigator.requests import ModelCallConfig
from durable_navigator.navcore.research.research import ResearchResult
from durable_navigator.workflows.research import ResearchWorkflow

from tests.support.research import research_request, wait_for_call_in_flight, write_research_script
from tests.workflows.test_kill_restart import kill, spawn_worker
from tests.support.research import COST, calls_answer, finish_answer, text_answer


def _script(tmp_path: Path) -> str:
    read = {"name": "read_file", "args": {"path": "src/budgetkit/plugin.py", "start_line": 1, "end_line": 33}}
    search = {"name": "search_codebase", "args": {"query": "after_call"}}
    return write_research_script(tmp_path / "script.yaml", {
        "research.plan": [text_answer('["read the plugin", "find the callers of after_call"]')],
        "research.execute": ["", calls_answer(read), finish_answer(("after_call records usage", "src/budgetkit/plugin.py:26-29")),
                             calls_answer(search), calls_answer({"name": "get_callers", "args": {"symbol": "after_call"}}),
                             finish_answer(("on_stream_end calls after_call", "src/budgetkit/plugin.py:31-33"))],
        "research.refine": [text_answer("DECISION: FINISH\nREASON: found both")],
        "research.synthesize": [text_answer("Usage is recorded twice (src/budgetkit/plugin.py:26-33).")],
    })


async def _wait_turn(client: Client, wid: str, turn: int, timeout_s: float = 90) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while asyncio.get_running_loop().time() < deadline:
        try:
            report = await client.get_workflow_handle(wid).query(ResearchWorkflow.get_status)
        except Exception:  # noqa: BLE001 - no worker has picked the run up yet
            await asyncio.sleep(0.1)
            continue
        assert isinstance(report, TurnReport)
        if report.step >= turn and report.status == "thinking":
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"the run never reached turn {turn}")


async def test_research_survives_worker_sigkill_mid_step(client: Client, task_queue: str, tmp_path: Path) -> None:
    target = client.service_client.config.target_host
    artifacts, log = tmp_path / "artifacts", tmp_path / "worker.log"
    req = research_request(tmp_path, model=_script(tmp_path),
                           model_call=ModelCallConfig(max_attempts=5, heartbeat_s=2, start_to_close_s=30,
                                                      initial_interval_s=0.2))
    wid = "research-kill-test"
    first = await asyncio.to_thread(spawn_worker, target, task_queue, artifacts, log)
    try:
        handle = await client.start_workflow(ResearchWorkflow.run, req, id=wid, task_queue=task_queue,
                                             execution_timeout=timedelta(seconds=180))
        await _wait_turn(client, wid, 3)
        # a model call must be in flight when the worker dies: "thinking" alone also holds while the
        # turn's tool call runs and the next turn is prepared (a kill there loses no model attempt)
        await wait_for_call_in_flight(client, handle)
    finally:
        kill(first)
    second = await asyncio.to_thread(spawn_worker, target, task_queue, artifacts, log)
    try:
        result: ResearchResult = await handle.result()
        view: DecisionLogView = await handle.query(ResearchWorkflow.get_decision_log)
        history = await handle.fetch_history()
    finally:
        kill(second)

    assert result.completed_normally and result.iterations == 5 and result.findings == 2
    turns = [e for e in view.entries if e.action in ("call_tools", "finish_step")]
    # one entry per executor turn, in order: nothing lost, nothing replayed twice
    assert [e.step for e in turns] == [1, 2, 3, 4, 5]
    # the ledger is the sum of what every logged call booked; the call lost with the worker was
    # retried (attempts ≥ 2) and its lost attempt booked at its upper bound, every other call once
    assert result.cost_micros == sum(e.cost_micros for e in view.entries)
    retried = [e for e in view.entries if e.attempts >= 2]
    assert retried and all(e.cost_micros > COST for e in retried)
    assert all(e.cost_micros == COST for e in view.entries if e.attempts == 1)
    # each tool call was scheduled once (a completed activity is never run again on replay)
    scheduled = [e.activity_task_scheduled_event_attributes.activity_type.name for e in history.events
                 if e.HasField("activity_task_scheduled_event_attributes")]
    assert [n for n in scheduled if n.startswith("tools.")] == ["tools.read_file", "tools.search_codebase",
                                                              "tools.get_callers"]
    assert log.stat().st_size > 0
