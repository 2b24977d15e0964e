"""A batch stopped just as a job finishes (found by bench/fuzz_surfaces.py, issue #29).

The batch forwards ``stop`` to its running jobs. When the stop signal and a job's completion reach
the batch in the same workflow task, the signal handler runs first and signals a job that has
already finished: Temporal answers ``ExternalWorkflowExecutionNotFound``, which failed the whole
batch ("Unable to signal external workflow because it was not found") instead of stopping it.
"""

from __future__ import annotations

import asyncio
import uuid

from temporalio.client import Client, WorkflowExecutionStatus

from tests.support.batch import batch_request, job, priced_activities, start_batch, write_script

from durable_navigator.navcore.batch.batch import BatchStopInput, JobStatus
from durable_navigator.workers.worker import build_worker
from durable_navigator.workflows.batch import BatchWorkflow


async def _status(client: Client, workflow_id: str) -> WorkflowExecutionStatus | None:
    try:
        return (await client.get_workflow_handle(workflow_id).describe()).status
    except Exception:  # noqa: BLE001 - not started yet
        return None


async def _until(client: Client, workflow_id: str, wanted: WorkflowExecutionStatus, timeout: float = 120) -> None:
    async with asyncio.timeout(timeout):
        while await _status(client, workflow_id) != wanted:
            await asyncio.sleep(0.2)


async def test_stop_arriving_with_a_jobs_completion_does_not_fail_the_batch(client: Client, tmp_path) -> None:
    batch_queue, job_queue = f"batch-{uuid.uuid4()}", f"jobs-{uuid.uuid4()}"
    script = write_script(tmp_path / "s.yaml", steps=1)
    req = batch_request(tmp_path, [job(0, script)], max_concurrency=1, task_queue=job_queue)
    child = f"{req.batch_id}-job-00000"
    async with build_worker(client, job_queue, activities=priced_activities(tmp_path)):
        async with build_worker(client, batch_queue, activities=priced_activities(tmp_path)):
            handle = await start_batch(client, batch_queue, req)
            await _until(client, child, WorkflowExecutionStatus.RUNNING)
        # the batch's worker is gone: the job finishes, then the stop arrives, and the batch sees both at once
        await _until(client, child, WorkflowExecutionStatus.COMPLETED)
        await handle.signal(BatchWorkflow.stop, BatchStopInput(reason="enough", sender="test"))
        async with build_worker(client, batch_queue, activities=priced_activities(tmp_path)):
            result = await asyncio.wait_for(handle.result(), 120)
    assert result.stopped == "enough"
    assert [o.status for o in result.outcomes] == [JobStatus.COMPLETED], result.outcomes
