"""Regenerate the committed BatchWorkflow histories used by the replay tests.

Run from the repository root after a deliberate, replay-compatible change to
``workflows/batch.py`` (nothing has been released: workflows change and these are re-recorded)::

    PYTHONPATH=. .venv/bin/python -m tests.histories.record_batch

Scenarios (scripted model, fixture repository, local dev server):
``basic`` — 3 jobs, one failing (missing repository), 2 at once, shared budget;
``stop`` — stop signal while jobs are pending; ``continue_as_new`` — 3 jobs
continuing as new after every 2 (two runs); ``resume`` — the same batch id run
again, recovering its completed children. Writes ``batch_<scenario>[_runN].json``.
"""

from __future__ import annotations

import asyncio
import tempfile
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

from tests.support.batch import batch_request, job, priced_activities, start_batch, write_script
from tests.conftest import temporal_binary
from temporalio.client import Client, WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from durable_navigator.navcore.batch.batch import BatchLimits, BatchStopInput
from durable_navigator.workers.converter import DATA_CONVERTER
from durable_navigator.workers.worker import build_worker
from durable_navigator.workflows.batch import BatchWorkflow
from durable_navigator.workflows.navigator import NAVIGATOR_SEARCH_ATTRIBUTES

Scenario = Callable[[Client, str, Path], Awaitable[list[WorkflowHandle[Any, Any]]]]


async def basic(client: Client, tq: str, tmp: Path) -> list[WorkflowHandle[Any, Any]]:
    script = write_script(tmp / "s.yaml", steps=2)
    jobs = [job(0, script), job(1, script, repo=tmp / "missing"), job(2, script)]
    handle = await start_batch(client, tq, batch_request(tmp, jobs, max_concurrency=2))
    await handle.result()
    return [handle]


async def stop(client: Client, tq: str, tmp: Path) -> list[WorkflowHandle[Any, Any]]:
    script = write_script(tmp / "s.yaml", steps=3)
    handle = await start_batch(client, tq, batch_request(tmp, [job(i, script) for i in range(4)], max_concurrency=1))
    await handle.signal(BatchWorkflow.stop, BatchStopInput(reason="recorded stop", sender="rec"))
    await handle.result()
    return [handle]


async def continued(client: Client, tq: str, tmp: Path) -> list[WorkflowHandle[Any, Any]]:
    script = write_script(tmp / "s.yaml", steps=1)
    limits = BatchLimits(job_timeout_s=90, continue_as_new_after_jobs=2)
    req = batch_request(tmp, [job(i, script) for i in range(3)], max_concurrency=1, limits=limits)
    handle = await start_batch(client, tq, req)
    await handle.result()
    return [handle]


async def resume(client: Client, tq: str, tmp: Path) -> list[WorkflowHandle[Any, Any]]:
    script = write_script(tmp / "s.yaml", steps=1)
    req = batch_request(tmp, [job(i, script) for i in range(2)], max_concurrency=2)
    await (await start_batch(client, tq, req)).result()
    handle = await start_batch(client, tq, req)  # same id: recovers, explores nothing twice
    await handle.result()
    return [handle]


SCENARIOS: dict[str, Scenario] = {"basic": basic, "stop": stop, "continue_as_new": continued, "resume": resume}


async def record(client: Client, out_dir: Path) -> list[Path]:
    """Run every scenario; write the batch's history (the runs of the last handle's id, oldest first)."""
    written: list[Path] = []
    for name, scenario in SCENARIOS.items():
        with tempfile.TemporaryDirectory() as tmp_name:
            tmp, tq = Path(tmp_name), f"record-batch-{name}-{uuid.uuid4()}"
            async with build_worker(client, tq, activities=priced_activities(tmp)):
                handle = (await scenario(client, tq, tmp))[-1]
                runs = [e async for e in client.list_workflows(f"WorkflowId = '{handle.id}'")]
            runs.sort(key=lambda r: r.start_time)
            if name == "resume":
                runs = runs[-1:]  # the resumed run is the interesting one
            for index, run in enumerate(runs):
                history = await client.get_workflow_handle(handle.id, run_id=run.run_id).fetch_history()
                suffix = f"_run{index + 1}" if len(runs) > 1 else ""
                path = out_dir / f"batch_{name}{suffix}.json"
                path.write_text(history.to_json())
                written.append(path)
    return written


async def main() -> None:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=temporal_binary(),
        data_converter=DATA_CONVERTER,
        search_attributes=NAVIGATOR_SEARCH_ATTRIBUTES,
    )
    try:
        for old in HERE.glob("batch_*.json"):
            old.unlink()
        for path in await record(env.client, HERE):
            print(f"wrote {path.relative_to(HERE.parents[1])} ({path.stat().st_size} B)")
    finally:
        await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
