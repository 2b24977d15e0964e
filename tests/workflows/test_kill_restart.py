"""A batch survives SIGKILL of its worker: nothing lost, nothing duplicated, no credential leaked.

The worker runs in a subprocess with fake credentials in its environment. It
is killed while child explorations are thinking and started again; the batch
then completes and every child's decision log is checked step by step
against its ledger, the batch pool against the children, and every history,
log line and artifact against the fake keys.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from datetime import timedelta
import sys
from pathlib import Path

from tests.support.batch import batch_request, job, write_script
from temporalio.client import Client

from durable_navigator.navcore.batch.batch import BatchProgress, BatchResult, JobStatus
from durable_navigator.navcore.run.budget import usd_to_micros
from durable_navigator.navcore.navigator.report import DecisionLogView
from durable_navigator.navcore.navigator.requests import ModelCallConfig
from durable_navigator.workflows.batch import BatchWorkflow

#: the worker script, run as a module from the repository root (``tests`` is a package)
WORKER = "tests.support.rel_worker"
REPO_ROOT = Path(__file__).resolve().parents[2]
FAKE_GEMINI = "AIzaFAKE-reliability-gemini-key-77aa11"
FAKE_TEMPORAL = "tmprl-FAKE-reliability-api-key-99bb22"
COST_PER_DECISION = 1000 * 1 + 100 * 2  # scripted usage × test prices, micro-dollars


def spawn_worker(target: str, task_queue: str, artifacts: Path, log: Path) -> subprocess.Popen[bytes]:
    """Start ``tests.support.rel_worker``; its output goes to ``log``; returns once it polls."""
    env = dict(os.environ, GEMINI_API_KEY=FAKE_GEMINI, GOOGLE_API_KEY=FAKE_GEMINI, TEMPORAL_API_KEY=FAKE_TEMPORAL)
    out = log.open("ab")
    proc = subprocess.Popen([sys.executable, "-m", WORKER, target, task_queue, str(artifacts), "0.6"], cwd=REPO_ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=out)
    assert proc.stdout is not None
    line = proc.stdout.readline().decode()
    assert "worker ready" in line, line + log.read_text()
    return proc


def kill(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait()


async def wait_thinking(client: Client, batch_id: str, ids: list[str], timeout_s: float = 60) -> None:
    """Until some child of the batch has logged a decision and is thinking again."""
    from durable_navigator.navcore.navigator.report import TurnReport

    deadline = asyncio.get_running_loop().time() + timeout_s
    while asyncio.get_running_loop().time() < deadline:
        for wid in ids:
            try:
                report = await client.get_workflow_handle(wid).query("get_status", result_type=TurnReport)
            except Exception:  # noqa: BLE001 - the child may not exist yet
                continue
            if report.step >= 2 and report.status == "thinking":
                return
        await asyncio.sleep(0.1)
    raise AssertionError(f"no child of {batch_id} reached step 2")


async def test_batch_survives_worker_sigkill(client, task_queue, tmp_path) -> None:
    target = client.service_client.config.target_host
    artifacts, log = tmp_path / "artifacts", tmp_path / "worker.log"
    steps = 4
    script = write_script(tmp_path / "s.yaml", steps=steps)
    req = batch_request(
        tmp_path, [job(i, script) for i in range(3)], max_concurrency=3,
        model_call=ModelCallConfig(max_attempts=5, heartbeat_s=2, start_to_close_s=30, initial_interval_s=0.2),
    )
    child_ids = [f"{req.batch_id}-job-{i:05d}" for i in range(3)]
    first = await asyncio.to_thread(spawn_worker, target, task_queue, artifacts, log)
    try:
        handle = await client.start_workflow(BatchWorkflow.run, req, id=req.batch_id, task_queue=task_queue,
                                             execution_timeout=timedelta(seconds=150))
        await wait_thinking(client, req.batch_id, child_ids)
    finally:
        kill(first)
    second = await asyncio.to_thread(spawn_worker, target, task_queue, artifacts, log)
    try:
        result: BatchResult = await handle.result()
        progress: BatchProgress = await handle.query(BatchWorkflow.get_progress)
        logs = [await client.get_workflow_handle(w).query("get_decision_log", result_type=DecisionLogView)
                for w in child_ids]
        histories = [await client.get_workflow_handle(w).fetch_history() for w in [req.batch_id, *child_ids]]
    finally:
        kill(second)

    assert [o.status for o in result.outcomes] == [JobStatus.COMPLETED] * 3
    assert progress.done and progress.running == 0
    for outcome, view in zip(result.outcomes, logs):
        entries = view.entries
        # one entry per step, in order: nothing lost, nothing replayed twice
        assert [e.step for e in entries] == list(range(1, steps + 2)), [e.step for e in entries]
        assert [e.action for e in entries] == ["update_flight_plan"] * steps + ["finalize_context"]
        # the ledger (what the child reports as spent) equals the sum of what every entry booked; an
        # attempt lost with the killed worker reported nothing, so it is booked at its upper bound
        assert outcome.spent_micros == sum(e.cost_micros for e in entries) >= (steps + 1) * COST_PER_DECISION
        for e in entries:
            assert e.cost_micros == COST_PER_DECISION or e.attempts >= 2, e
        assert outcome.usage.input_tokens == sum(e.input_tokens for e in entries)
    assert usd_to_micros(result.spent_usd) == sum(o.spent_micros for o in result.outcomes)

    # no credential in any history, log line or artifact
    blobs = [h.to_json() for h in histories] + [log.read_text(errors="replace")]
    blobs += [p.read_text(errors="replace") for p in tmp_path.rglob("*") if p.is_file() and p != log]
    for secret in (FAKE_GEMINI, FAKE_TEMPORAL):
        assert not any(secret in blob for blob in blobs), f"{secret} leaked"
    assert log.stat().st_size > 0  # the worker did log; the check above is not vacuous
