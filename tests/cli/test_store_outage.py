"""Issue #31 (fleet soak finding): a run rides out an object-store outage longer than a few seconds.

The fleet soak restarted SeaweedFS (down ~20 s) and lost a run: its scan could not store the map,
and the activity's retry policy (3 attempts, Temporal's default 1 s / 2 s backoff) gave up after
3 s. Now the retries of every index/render/result activity span about a minute. Here a real
``navigator worker`` (a process on a host of its own, :class:`tests.support.hosts.Host`) runs an
exploration while its real S3 server (SeaweedFS) is down: the scan fails attempt after attempt —
observed, not timed, through the pending activity's attempt count — until the server is started
again on the same ports and data, and the run then finishes.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

from temporalio.client import Client, WorkflowExecutionStatus

from durable_navigator.cli.config import NavigatorConfig
from durable_navigator.cli.runrequest import build_request, new_run_id
from durable_navigator.navcore.navigator.requests import ExplorationResult
from durable_navigator.navcore.run_kinds import EXPLORE
from tests.support.cli import FIXTURE_REPO
from tests.support.hosts import Host
from tests.support.seaweed import SeaweedS3

GOAL = "how is the token budget enforced?"
#: a cold worker on a loaded 2-core machine
POLLING_WITHIN_S = 90.0
#: more failed attempts than the old policy allowed in all (3)
OUTLIVED_ATTEMPTS = 4


def _wait_polling(host: Host) -> None:
    deadline = time.monotonic() + POLLING_WITHIN_S
    while "worker polling" not in host.log():
        assert time.monotonic() < deadline, host.log()[-3000:]
        time.sleep(0.3)


async def _scan_attempts_while_down(client: Client, workflow_id: str, attempts: int) -> str:
    """Wait until the pending scan has failed ``attempts - 1`` times on the store; its last failure."""
    handle = client.get_workflow_handle(workflow_id)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        desc = await handle.describe()
        # the run must not end while the store is down: that is the bug
        assert desc.status == WorkflowExecutionStatus.RUNNING, f"the run closed ({desc.status}) during the outage"
        for pending in desc.raw_description.pending_activities:
            if pending.activity_type.name == "navigator.scan" and pending.attempt >= attempts:
                return pending.last_failure.message
        await asyncio.sleep(0.5)
    raise AssertionError(f"the scan did not reach attempt {attempts} in 120 s")


async def test_a_run_outlives_an_object_store_restart(client: Client, task_queue: str, tmp_path: Path) -> None:
    s3 = SeaweedS3(tmp_path / "seaweed")
    (tmp_path / "seaweed").mkdir()
    await asyncio.to_thread(s3.start)
    try:
        host = Host.create(tmp_path / "worker-host", s3, client.service_client.config.target_host, task_queue,
                           f"outage-{uuid.uuid4().hex[:8]}")
        with host.worker():
            await asyncio.to_thread(_wait_polling, host)
            await asyncio.to_thread(s3.stop)
            request = build_request(FIXTURE_REPO, GOAL, config=NavigatorConfig(), interactive=False, budget_usd=None,
                                    tokens=None, model=None, max_iterations=3, out=None)
            wid = new_run_id(EXPLORE, FIXTURE_REPO)
            handle = await client.start_workflow(EXPLORE.workflow_type, request, id=wid, task_queue=task_queue,
                                                 result_type=ExplorationResult)
            failure = await _scan_attempts_while_down(client, wid, OUTLIVED_ATTEMPTS)
            await asyncio.to_thread(s3.restart)
            done = await asyncio.wait_for(handle.result(), timeout=240)
    finally:
        s3.stop()
    assert "object store" in failure and "that the store is up" in failure, failure
    assert done.stop_reason.value == "finalized", done
    assert done.context_ref is not None
