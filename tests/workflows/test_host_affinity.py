"""Host affinity without pinning (issue 31): a run's renders and code tools follow its scan to the host
whose index is warm; when that host is gone the run finishes on another one, paying no model call twice.

Two real workers (each: the shared task queue + its own host queue, as ``navigator worker`` runs them)
on one dev server, told apart by their client identity; who ran what is read from the history's
``ActivityTaskStarted`` events, as the Web UI shows it.
"""

from __future__ import annotations

import uuid
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from durable_navigator.navcore.navigator.messages import ApproveInput
from durable_navigator.navcore.navigator.requests import ExplorationResult
from durable_navigator.navcore.navigator.state import ExecutionMode, StopReason
from durable_navigator.navcore.run.tools import ToolCall
from durable_navigator.workers.converter import DATA_CONVERTER
from durable_navigator.workers.worker import build_host_worker, build_worker, host_queue
from durable_navigator.workflows.navigator import NavigatorWorkflow
from tests.support.navigator import TIMEOUT, ZOOM_BUDGET, ZOOM_OUT_CLI, ScriptProvider, make_activities, make_request
from tests.support.navigator import wait_for

INDEX_BOUND = ("navigator.scan", "navigator.render_map", "tools.")
HOSTS = ("host-a", "host-b")


async def _client_as(client: Client, identity: str) -> Client:
    return await Client.connect(client.service_client.config.target_host, namespace=client.namespace,
                                data_converter=DATA_CONVERTER, identity=identity)


async def _start_host(stack: AsyncExitStack, client: Client, task_queue: str, tmp_path: Path,
                      provider: ScriptProvider) -> None:
    """One host: its own activities (engine cache), the shared artifact directory, both queues polled."""
    acts = make_activities(tmp_path, provider)
    await stack.enter_async_context(build_worker(client, task_queue, activities=acts))
    await stack.enter_async_context(build_host_worker(client, task_queue, acts))


async def _runs(handle: Any) -> list[tuple[str, str, str]]:
    """(activity type, task queue, identity of the worker that started it) of every started activity."""
    scheduled: dict[int, tuple[str, str]] = {}
    runs: list[tuple[str, str, str]] = []
    async for e in handle.fetch_history_events():
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            a = e.activity_task_scheduled_event_attributes
            scheduled[e.event_id] = (a.activity_type.name, a.task_queue.name)
        elif e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            s = e.activity_task_started_event_attributes
            runs.append((*scheduled[s.scheduled_event_id], s.identity))
    return runs


async def test_renders_and_tools_run_on_the_host_that_scanned(client, task_queue, tmp_path) -> None:
    tools = [ToolCall(name="search_codebase", args={"query": "ledger reserve"}),
             ToolCall(name="read_file", args={"path": "src/budgetkit/ledger.py", "start_line": 1, "end_line": 5})]
    provider = ScriptProvider(steps=[ZOOM_BUDGET, tools, ZOOM_OUT_CLI, tools, ZOOM_BUDGET])
    async with AsyncExitStack() as stack:
        for name in HOSTS:
            await _start_host(stack, await _client_as(client, name), task_queue, tmp_path, provider)
        handle = await client.start_workflow(NavigatorWorkflow.run, make_request(tmp_path, max_iterations=10),
                                             id=f"nav-affinity-{uuid.uuid4()}", task_queue=task_queue,
                                             execution_timeout=TIMEOUT)
        result = await handle.result()
        runs = await _runs(handle)
    assert result.stop_reason is StopReason.FINALIZED
    bound = [r for r in runs if r[0].startswith(INDEX_BOUND)]
    scan_host = bound[0][2]
    assert bound[0][0] == "navigator.scan" and scan_host in HOSTS
    later = bound[1:]
    assert len(later) == 7  # 3 renders and 4 tool calls, every one on the scanning host, through its queue
    assert {identity for _, _, identity in later} == {scan_host}
    assert {queue for _, queue, _ in later} == {host_queue(task_queue, scan_host)}


async def _interactive(client: Client, task_queue: str, tmp_path: Path, kill_scan_host: bool
                       ) -> tuple[ExplorationResult, list[tuple[str, str, str]], str]:
    provider = ScriptProvider(steps=[ZOOM_BUDGET, ZOOM_OUT_CLI, ZOOM_BUDGET])
    req = make_request(tmp_path, mode=ExecutionMode.INTERACTIVE, host_start_timeout_s=2.0)
    hosts = {name: AsyncExitStack() for name in HOSTS}
    try:
        for name, stack in hosts.items():
            await _start_host(stack, await _client_as(client, name), task_queue, tmp_path, provider)
        handle = await client.start_workflow(NavigatorWorkflow.run, req, id=f"nav-affinity-{uuid.uuid4()}",
                                             task_queue=task_queue, execution_timeout=TIMEOUT)
        await wait_for(handle, lambda r: r.awaiting_turn == 1)
        scan_host = next(identity for name, _, identity in await _runs(handle) if name == "navigator.scan")
        if kill_scan_host:
            await hosts.pop(scan_host).aclose()  # the warm host goes away while the run waits for a verdict
        for turn in (1, 2, 3):
            await wait_for(handle, lambda r, t=turn: r.awaiting_turn == t)
            await handle.signal(NavigatorWorkflow.approve, ApproveInput(turn=turn, sender="t"))
        result = await handle.result()
        return result, await _runs(handle), scan_host
    finally:
        for stack in hosts.values():
            await stack.aclose()


async def test_the_run_moves_to_another_host_when_the_warm_one_dies(client, tmp_path) -> None:
    reference, _, _ = await _interactive(client, f"test-{uuid.uuid4()}", tmp_path / "ref", kill_scan_host=False)
    queue = f"test-{uuid.uuid4()}"
    result, runs, dead = await _interactive(client, queue, tmp_path / "kill", kill_scan_host=True)
    assert result.stop_reason is StopReason.FINALIZED and result.iterations == reference.iterations == 4
    alive = next(h for h in HOSTS if h != dead)
    renders = [r for r in runs if r[0] == "navigator.render_map"]
    # before the kill on the scanning host; the first render after it waited on that host's queue (it never
    # started there: no ActivityTaskStarted) and ran on the shared queue; every later one followed the new host
    assert renders[0] == ("navigator.render_map", host_queue(queue, dead), dead)
    moved = renders.index(("navigator.render_map", queue, alive))
    assert moved >= 1 and all(r[2] == dead for r in renders[:moved])
    assert renders[moved + 1:] and set(renders[moved + 1:]) == {("navigator.render_map", host_queue(queue, alive),
                                                                 alive)}
    # nothing paid twice: the same model calls, tokens and dollars as the run nobody killed
    paid = [r for r in runs if r[0] == "model.request"]
    ref_paid = reference.model_attempts
    assert len(paid) == result.model_attempts == ref_paid
    assert result.cost_micros == reference.cost_micros and result.usage == reference.usage
