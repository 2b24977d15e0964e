"""Host affinity without pinning (issue 31): a run's index-bound activities (renders, code tools, the
request of each model call, the result) follow its scan to the host whose index is warm; when that host is
gone the run finishes on another one, paying no model call twice.

Two real workers (each: the shared task queue + its own host queue, as ``navigator worker`` runs them)
on one dev server, told apart by their client identity; who ran what is read from the history's
``ActivityTaskStarted`` events, as the Web UI shows it (``tests/support/affinity.py``).
"""

from __future__ import annotations

import uuid
from contextlib import AsyncExitStack
from pathlib import Path

from temporalio.client import Client

from durable_navigator.navcore.navigator.messages import ApproveInput
from durable_navigator.navcore.navigator.requests import ExplorationResult
from durable_navigator.navcore.navigator.state import ExecutionMode, StopReason
from durable_navigator.navcore.run.tools import ToolCall
from durable_navigator.workers.worker import host_queue
from durable_navigator.workflows.navigator import NavigatorWorkflow
from tests.support import FIXTURE_REPO
from tests.support.affinity import HOSTS, Run, activity_runs, client_as, host_bound, opened, start_host
from tests.support.navigator import TIMEOUT, ZOOM_BUDGET, ZOOM_OUT_CLI, ScriptProvider, make_activities, make_request
from tests.support.navigator import wait_for


async def test_renders_and_tools_run_on_the_host_that_scanned(client, task_queue, tmp_path) -> None:
    tools = [ToolCall(name="search_codebase", args={"query": "ledger reserve"}),
             ToolCall(name="read_file", args={"path": "src/budgetkit/ledger.py", "start_line": 1, "end_line": 5})]
    provider = ScriptProvider(steps=[ZOOM_BUDGET, tools, ZOOM_OUT_CLI, tools, ZOOM_BUDGET])
    acts = {name: make_activities(tmp_path, provider) for name in HOSTS}
    async with AsyncExitStack() as stack:
        for name in HOSTS:
            await start_host(stack, await client_as(client, name), task_queue, acts[name])
        handle = await client.start_workflow(NavigatorWorkflow.run, make_request(tmp_path, max_iterations=10),
                                             id=f"nav-affinity-{uuid.uuid4()}", task_queue=task_queue,
                                             execution_timeout=TIMEOUT)
        result = await handle.result()
        runs = await activity_runs(handle)
    assert result.stop_reason is StopReason.FINALIZED
    bound = host_bound(runs)
    scan_host = bound[0][2]
    assert bound[0][0] == "navigator.scan" and scan_host in HOSTS
    later = bound[1:]
    # 6 requests of model calls, 3 renders, 4 tool calls and the result, every one on the scanning host, through
    # its queue (the requests and the result went to the shared queue before: any host could take them)
    kinds = sorted(name for name, _, _ in later)
    assert kinds == sorted(["model.prepare"] * 6 + ["navigator.render_map"] * 3 + ["navigator.write_result"]
                           + ["tools.search_codebase", "tools.read_file"] * 2)
    assert {identity for _, _, identity in later} == {scan_host}
    assert {queue for _, queue, _ in later} == {host_queue(task_queue, scan_host)}
    # the model calls themselves stay on the shared queue (a lost host never re-pays one)
    assert {queue for name, queue, _ in runs if name == "model.request"} == {task_queue}
    # so the other host never indexed the repository
    other = next(h for h in HOSTS if h != scan_host)
    assert opened(acts[scan_host], str(FIXTURE_REPO)) and not opened(acts[other], str(FIXTURE_REPO))


async def _interactive(client: Client, task_queue: str, tmp_path: Path, kill_scan_host: bool
                       ) -> tuple[ExplorationResult, list[Run], str]:
    provider = ScriptProvider(steps=[ZOOM_BUDGET, ZOOM_OUT_CLI, ZOOM_BUDGET])
    req = make_request(tmp_path, mode=ExecutionMode.INTERACTIVE, host_start_timeout_s=2.0)
    hosts = {name: AsyncExitStack() for name in HOSTS}
    try:
        for name, stack in hosts.items():
            await start_host(stack, await client_as(client, name), task_queue, make_activities(tmp_path, provider))
        handle = await client.start_workflow(NavigatorWorkflow.run, req, id=f"nav-affinity-{uuid.uuid4()}",
                                             task_queue=task_queue, execution_timeout=TIMEOUT)
        await wait_for(handle, lambda r: r.awaiting_turn == 1)
        scan_host = next(identity for name, _, identity in await activity_runs(handle) if name == "navigator.scan")
        if kill_scan_host:
            await hosts.pop(scan_host).aclose()  # the warm host goes away while the run waits for a verdict
        for turn in (1, 2, 3):
            await wait_for(handle, lambda r, t=turn: r.awaiting_turn == t)
            await handle.signal(NavigatorWorkflow.approve, ApproveInput(turn=turn, sender="t"))
        result = await handle.result()
        return result, await activity_runs(handle), scan_host
    finally:
        for stack in hosts.values():
            await stack.aclose()


async def test_the_run_moves_to_another_host_when_the_warm_one_dies(client, tmp_path) -> None:
    reference, _, _ = await _interactive(client, f"test-{uuid.uuid4()}", tmp_path / "ref", kill_scan_host=False)
    queue = f"test-{uuid.uuid4()}"
    result, runs, dead = await _interactive(client, queue, tmp_path / "kill", kill_scan_host=True)
    assert result.stop_reason is StopReason.FINALIZED and result.iterations == reference.iterations == 4
    alive = next(h for h in HOSTS if h != dead)
    bound = host_bound(runs)
    # before the kill every index-bound activity ran on the scanning host; the first one after it (the next
    # turn's model request) waited on that host's queue (it never started there: no ActivityTaskStarted) and
    # ran on the shared queue; every later one followed the new host
    assert bound[0] == ("navigator.scan", queue, dead)  # the scan: any host, through the shared queue
    moved = next(i for i, r in enumerate(bound) if i and r[1] == queue)
    assert bound[moved][2] == alive and all(r[1:] == (host_queue(queue, dead), dead) for r in bound[1:moved])
    after = bound[moved + 1:]
    assert {r[0] for r in after} >= {"model.prepare", "navigator.render_map", "navigator.write_result"}
    assert {r[1:] for r in after} == {(host_queue(queue, alive), alive)}
    # nothing paid twice: the same model calls, tokens and dollars as the run nobody killed
    paid = [r for r in runs if r[0] == "model.request"]
    ref_paid = reference.model_attempts
    assert len(paid) == result.model_attempts == ref_paid
    assert result.cost_micros == reference.cost_micros and result.usage == reference.usage
