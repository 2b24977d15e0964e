"""Durability and history hygiene: worker SIGKILL + restart, credentials, history size."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path

from tests.support.navigator import ScriptProvider, update, wait_for
from tests.support.navigator import NO_LOOP_GUARD, make_activities, make_request

from durable_navigator.navcore.navigator.requests import ModelCallConfig, ExplorationResult
from durable_navigator.navcore.navigator.state import StopReason
from durable_navigator.workflows.navigator import NavigatorWorkflow

#: the worker script, run as a module from the repository root (``tests`` is a package)
WORKER_PROC = "tests.support.worker_proc"
REPO_ROOT = Path(__file__).resolve().parents[2]
FAKE_KEY = "AIzaFAKE-test-credential-0123456789abcdef"
#: the issue's bar: history growth per iteration whatever the map size
MAX_HISTORY_BYTES_PER_ITERATION = 8 * 1024


def _spawn_worker(target: str, task_queue: str, artifact_dir: Path, log: Path) -> subprocess.Popen[bytes]:
    """Start ``tests.support.worker_proc`` (output to ``log``, never a pipe that could fill) and wait until it polls."""
    env = dict(os.environ, GEMINI_API_KEY=FAKE_KEY, GOOGLE_API_KEY=FAKE_KEY)
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", WORKER_PROC, target, task_queue, str(artifact_dir), "0.4"], cwd=REPO_ROOT,
            env=env, stdout=out, stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + 60
    while b"worker ready" not in log.read_bytes():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"worker did not start: {log.read_text()[-2000:]}")
        time.sleep(0.1)
    return proc


async def test_worker_sigkill_and_restart_completes_without_lost_or_duplicated_steps(
    client, task_queue, tmp_path
) -> None:
    target = client.service_client.config.target_host
    artifacts = tmp_path / "artifacts"
    req = make_request(
        tmp_path,
        max_iterations=8,
        model_call=ModelCallConfig(max_attempts=3, heartbeat_s=2, start_to_close_s=20, initial_interval_s=0.2),
        profile=NO_LOOP_GUARD,  # the worker's script oscillates on purpose
    )
    wf_id = f"nav-kill-{uuid.uuid4()}"
    first = await asyncio.to_thread(_spawn_worker, target, task_queue, artifacts, tmp_path / "worker1.log")
    try:
        handle = await client.start_workflow(
            NavigatorWorkflow.run, req, id=wf_id, task_queue=task_queue, execution_timeout=timedelta(seconds=120)
        )
        await wait_for(handle, lambda r: r.step >= 2 and r.status == "thinking")
        await _model_request_started(handle)  # killed mid-call, not while the call is still queued
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    await asyncio.sleep(1.0)
    second = await asyncio.to_thread(_spawn_worker, target, task_queue, artifacts, tmp_path / "worker2.log")
    try:
        result: ExplorationResult = await handle.result()
        log = await handle.query(NavigatorWorkflow.get_decision_log)
        history = await handle.fetch_history()
    finally:
        second.send_signal(signal.SIGKILL)
        second.wait()
    assert result.stop_reason is StopReason.FINALIZED
    assert [e.step for e in log.entries] == list(range(1, result.iterations + 1)) == list(range(1, 8))
    # the ledger equals the sum of the usage recorded per decision
    assert result.cost_micros == sum(e.cost_micros for e in log.entries)
    assert result.usage.input_tokens == sum(e.input_tokens for e in log.entries)
    # the decide attempt lost with the killed worker was retried and counted
    assert any(e.attempts >= 2 for e in log.entries)
    assert result.model_attempts == sum(e.attempts for e in log.entries)
    # the key was in the worker's environment, never in history or worker logs
    for log_file in tmp_path.glob("worker*.log"):
        assert FAKE_KEY not in log_file.read_text()
    assert FAKE_KEY not in history.to_json()
    assert "AIza" not in history.to_json()


async def _model_request_started(handle, timeout_s: float = 20.0) -> None:
    """Wait until a worker has started a ``model.request`` attempt (server's pending-activity view)."""
    from temporalio.api.enums.v1 import PendingActivityState

    deadline = asyncio.get_running_loop().time() + timeout_s
    while asyncio.get_running_loop().time() < deadline:
        described = await handle.describe()
        if any(p.activity_type.name == "model.request" and p.state == PendingActivityState.PENDING_ACTIVITY_STATE_STARTED
               for p in described.raw_description.pending_activities):
            return
        await asyncio.sleep(0.05)
    raise AssertionError("no model.request attempt started in time")


def _iteration_bytes(history) -> list[int]:
    """Server-counted (protobuf) bytes of the events of each iteration.

    An iteration runs from one ``model.prepare`` schedule to the next.
    """
    sizes: list[int] = []
    current: int | None = None
    for event in history.events:
        attrs = event.activity_task_scheduled_event_attributes
        if event.HasField("activity_task_scheduled_event_attributes") and attrs.activity_type.name in (
            "model.prepare",
            "navigator.write_result",
        ):
            if current is not None:
                sizes.append(current)
            current = 0
        if current is not None:
            current += event.ByteSize()
    return sizes


async def test_history_bytes_per_iteration_on_a_large_map(client, task_queue, start_worker, tmp_path) -> None:
    steps = [update(set_rules=[{"glob": f"src/budgetkit/{n}", "level": 4}]) for n in
             ("ledger.py", "plugin.py", "pricing.py", "cli.py", "__init__.py")]
    provider = ScriptProvider(steps=steps)
    # ~3,000 filler lines per file at level >= 2: a map of about half a megabyte per iteration
    acts = make_activities(tmp_path, provider, pad_lines=3000)
    # a long goal (~3,000 characters) must not grow history per iteration either
    goal = "why does the budget plugin double-count tokens? " + "Context from the bug report. " * 100
    req = make_request(tmp_path, token_budget=1_000_000, max_iterations=10, goal=goal)
    wf_id = f"nav-size-{uuid.uuid4()}"
    async with start_worker(acts):
        result = await client.execute_workflow(
            NavigatorWorkflow.run, req, id=wf_id, task_queue=task_queue, execution_timeout=timedelta(seconds=60)
        )
        history = await client.get_workflow_handle(wf_id).fetch_history()
    assert result.map_metadata is not None
    assert result.map_ref is not None
    map_bytes = len(acts.store.get_bytes(result.map_ref))
    total = sum(e.ByteSize() for e in history.events)
    per_iteration = _iteration_bytes(history)
    print(
        f"\nmap {map_bytes} B; history {total} B (protobuf) / {len(history.to_json())} B (JSON) over "
        f"{result.iterations} iterations; per iteration {per_iteration} B, max {max(per_iteration)} B"
    )
    assert map_bytes > 400_000
    assert len(per_iteration) == result.iterations
    assert max(per_iteration) <= MAX_HISTORY_BYTES_PER_ITERATION
    assert "filler" not in history.to_json()

