"""Issue #31: a host SIGKILLed *inside* an activity of a run; the run finishes on another host, same pack.

Two ``navigator worker`` processes on hosts of their own (own HOME/XDG/cache, one S3 bucket of a
real SeaweedFS, one Temporal). The repository is a git URL served over HTTP by the test
(:class:`tests.support.gitgate.GitGate`), whose object downloads wait at a gate: the first host's
scan activity is checking the commit out when the test sees it there (no timing) and SIGKILLs
that host. The gate opens; the scan's heartbeat timeout hands the activity to the second host,
which fetches into its own cache and finishes the run. The pack equals (run ids and times masked)
the same request run afterwards on the surviving host without faults, and nothing is paid twice:
the ledger equals the decision log's usage and every completed ``decide`` has exactly one entry.
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
import socket
import time
import uuid
from pathlib import Path

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from durable_navigator.navcore.navigator.report import DecisionLogView
from durable_navigator.navcore.navigator.requests import ExplorationResult
from tests.support.cli import FIXTURE_REPO
from tests.support.gitgate import GitGate
from tests.support.hosts import Host
from tests.support.seaweed import SeaweedS3

GOAL = "how is the token budget enforced?"
#: a cold worker on a loaded 2-core machine
POLLING_WITHIN_S = 90.0
#: decision-log actions that come from a ``decide`` model call (bench/soak.py's)
MODEL_ACTIONS = {"update_flight_plan", "finalize_context", "invalid", "call_tools"}


def _wait_polling(host: Host, after: int = 0) -> None:
    deadline = time.monotonic() + POLLING_WITHIN_S
    while "worker polling" not in host.log()[after:]:
        assert time.monotonic() < deadline, host.log()[-3000:]
        time.sleep(0.3)


def _masked(text: str) -> str:
    """``text`` with what differs between two runs of one request by nature masked (run id, times)."""
    text = re.sub(r"\bnav-[0-9A-Za-z._-]+", "<run-id>", text)
    text = re.sub(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?", "<time>", text)
    return re.sub(r"\b\d+(?:\.\d+)?\s?(?:ms|s)\b", "<duration>", text)


async def _scan_starts(client: Client, wid: str) -> list[tuple[int, str]]:
    """(attempt, worker identity) of the run's scan starts recorded in its history."""
    scans: set[int] = set()
    starts: list[tuple[int, str]] = []
    async for e in client.get_workflow_handle(wid).fetch_history_events():
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            if e.activity_task_scheduled_event_attributes.activity_type.name == "navigator.scan":
                scans.add(e.event_id)
        elif e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            s = e.activity_task_started_event_attributes
            if s.scheduled_event_id in scans:
                starts.append((s.attempt, s.identity))
    return starts


async def _decide_completions(client: Client, wid: str) -> int:
    decides: set[int] = set()
    done = 0
    async for e in client.get_workflow_handle(wid).fetch_history_events():
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            a = e.activity_task_scheduled_event_attributes
            if a.activity_type.name == "model.request" and json.loads(a.input.payloads[0].data).get("kind") == "decide":
                decides.add(e.event_id)
        elif e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            done += e.activity_task_completed_event_attributes.scheduled_event_id in decides
    return done


async def test_a_host_killed_inside_the_scan_hands_the_run_to_another(
    client: Client, task_queue: str, tmp_path: Path, s3_server: SeaweedS3
) -> None:
    prefix, address = f"kill-{uuid.uuid4().hex[:8]}", client.service_client.config.target_host
    doomed, survivor, asker = (Host.create(tmp_path / name, s3_server, address, task_queue, prefix)
                               for name in ("host-a", "host-b", "laptop"))
    gate = GitGate(FIXTURE_REPO, tmp_path / "git")
    out = asker.root / "out"
    try:
        with survivor.worker() as b_proc, doomed.worker() as a_proc:
            await asyncio.to_thread(_wait_polling, doomed)
            # host B is not polling yet: host A takes the scan (b_proc started, then stopped until A is inside)
            b_proc.send_signal(signal.SIGSTOP)
            followed = asyncio.create_task(asyncio.to_thread(
                asker.run, "explore", gate.url, GOAL, "--ref", "main", "--json", "--out", str(out), timeout=600))
            inside = await asyncio.to_thread(gate.entered.wait, 240)
            assert inside, f"no host fetched the repository: {gate.requests}"
            a_proc.send_signal(signal.SIGKILL)  # ours, by pid; inside the scan (its fetch waits at the gate)
            a_proc.wait()
            b_proc.send_signal(signal.SIGCONT)
            await asyncio.to_thread(_wait_polling, survivor)
            gate.release()
            first = await followed
            assert first.returncode == 0, first.stderr[-3000:]
            again = await asyncio.to_thread(asker.run, "explore", gate.url, GOAL, "--ref", "main", "--json",
                                            "--out", str(out), timeout=600)
            assert again.returncode == 0, again.stderr[-3000:]
            result, reference = json.loads(first.stdout), json.loads(again.stdout)
            wid = result["workflow_id"]
            view = await client.get_workflow_handle(wid).query("get_decision_log", result_type=DecisionLogView)
            done = await client.get_workflow_handle(wid, result_type=ExplorationResult).result()
    finally:
        gate.close()
    starts = await _scan_starts(client, wid)
    # A was inside the scan's first attempt when it died (B was stopped, the fetch waited at the gate); the
    # history keeps the started event of the last attempt only: a later one, on B
    [(attempt, identity)] = starts
    assert attempt >= 2 and identity == f"{b_proc.pid}@{socket.gethostname()}", (starts, a_proc.pid)
    assert done.stop_reason.value == "finalized", done
    assert _masked(Path(result["context_path"]).read_text()) == _masked(Path(reference["context_path"]).read_text())
    entries = [e for e in view.entries if e.action != "budget_refused"]
    assert done.cost_micros == sum(e.cost_micros for e in entries)
    assert done.usage.input_tokens == sum(e.input_tokens for e in entries)
    assert await _decide_completions(client, wid) == sum(1 for e in entries if e.action in MODEL_ACTIONS)
