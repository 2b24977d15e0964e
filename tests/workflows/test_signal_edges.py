"""Signal payload edge cases found by the fuzzer, pinned as explicit cases.

The two navigator cases were defects of ``workflows/navigator.py`` (a ``null``
payload and a sub-micro-dollar budget raise used to fail the workflow task on
every retry); they now pin the fix: such signals are ignored and logged.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta
from typing import Any

from tests.support.batch import batch_request, job, priced_activities, start_batch, write_script
from tests.support.navigator import ZOOM_BUDGET, ScriptProvider, wait_for
from temporalio.api.enums.v1 import EventType, WorkflowTaskFailedCause
from temporalio.client import WorkflowHandle
from tests.support.navigator import make_activities, make_request

from durable_navigator.navcore.batch.batch import BatchResult, JobStatus
from durable_navigator.navcore.navigator.state import ExecutionMode
from durable_navigator.workflows.navigator import NavigatorWorkflow


async def _failed_tasks(handle: WorkflowHandle[Any, Any]) -> list[str]:
    history = await handle.fetch_history()
    return [
        e.workflow_task_failed_event_attributes.failure.message
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
        # UNHANDLED_COMMAND: a signal arrived while the task completed; the server retries it (normal)
        and e.workflow_task_failed_event_attributes.cause
        != WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND
    ]


async def _interactive_run(client: Any, task_queue: str, tmp_path: Any) -> WorkflowHandle[Any, Any]:
    req = make_request(tmp_path, mode=ExecutionMode.INTERACTIVE, max_iterations=4)
    handle = await client.start_workflow(NavigatorWorkflow.run, req, id=f"nav-edge-{uuid.uuid4()}",
                                         task_queue=task_queue, execution_timeout=timedelta(seconds=30))
    await wait_for(handle, lambda r: r.status == "awaiting_approval")
    return handle


async def test_null_approve_payload_does_not_fail_the_workflow_task(client, task_queue, start_worker, tmp_path) -> None:
    async with start_worker(make_activities(tmp_path, ScriptProvider(steps=[ZOOM_BUDGET] * 4))):
        handle = await _interactive_run(client, task_queue, tmp_path)
        await handle.signal("approve", None)
        await asyncio.sleep(1.0)
        failures = await _failed_tasks(handle)
        await handle.terminate("test over")
    assert failures == []


async def test_sub_micro_raise_budget_does_not_fail_the_exploration(client, task_queue, start_worker, tmp_path) -> None:
    async with start_worker(make_activities(tmp_path, ScriptProvider(steps=[ZOOM_BUDGET] * 4))):
        handle = await _interactive_run(client, task_queue, tmp_path)
        await handle.signal("raise_budget", {"add_usd": "0.0000001", "sender": "fuzz"})
        await asyncio.sleep(1.0)
        desc = await handle.describe()
        failures = await _failed_tasks(handle)
        if desc.status is not None and desc.status.name == "RUNNING":
            await handle.terminate("test over")
    assert desc.status is not None and desc.status.name == "RUNNING" and failures == []


async def test_null_stop_payload_stops_the_batch_cleanly(client, task_queue, start_worker, tmp_path) -> None:
    script = write_script(tmp_path / "s.yaml", steps=2)
    req = batch_request(tmp_path, [job(i, script) for i in range(4)], max_concurrency=1)
    async with start_worker(priced_activities(tmp_path)):
        handle = await start_batch(client, task_queue, req)
        await handle.signal("stop", None)
        result: BatchResult = await handle.result()
        failures = await _failed_tasks(handle)
    assert failures == []
    assert result.stopped == "stopped by user" and result.count(JobStatus.SKIPPED) >= 3
