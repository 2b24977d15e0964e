"""A run can always be ended, and a run that cannot progress says why (#29), on a real dev server.

* Workflow code that raises a deterministic error (here the issue's repro: a request whose
  budget rounds to zero micro-dollars, which ``BudgetLedger`` refuses inside the workflow)
  fails the *run* with the error (now already where the worker decodes its input model) — before, the workflow task failed and was retried forever,
  ``result`` waited until Ctrl-C. ``status`` and ``result`` report it, exit 1.
* A workflow task that keeps failing for a reason that stays a task failure (a
  ``NondeterminismError``: new worker code no longer replays the history) is reported by
  ``status`` / ``result --wait`` as stuck, with the error, exit 1, instead of waiting; and
  ``stop`` ends it (terminated, with the reason), where the stop signal alone never could.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
import pytest_asyncio
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError
from temporalio.worker import Worker

from tests.support.cli import FIXTURE_REPO, ainvoke
from tests.support.navigator import make_pricer
from tests.support.stuck_workflow import STUCK_ERROR, NavigatorThatNoLongerReplays

from durable_navigator.activities.artifacts import LocalArtifactStore
from durable_navigator.activities.navigator import NavigatorActivities
from durable_navigator.cli.stuck import stuck_reason
from durable_navigator.navcore.navigator.requests import ExplorationRequest, ExplorationResult
from durable_navigator.workers.worker import WORKFLOW_FAILURE_EXCEPTION_TYPES, build_worker

@pytest_asyncio.fixture(loop_scope="session")
async def served(client: Client, task_queue: str, tmp_path: Path) -> AsyncIterator[dict[str, str]]:
    """A navigator worker, one serving a navigator that no longer replays, and the CLI's env."""
    activities = NavigatorActivities(LocalArtifactStore(tmp_path / "artifacts"), pricer=make_pricer())
    (tmp_path / "navigator.yaml").write_text("{}\n")
    env = {"TEMPORAL_ADDRESS": client.service_client.config.target_host, "NAVIGATOR_TASK_QUEUE": task_queue,
           "NAVIGATOR_CONFIG": str(tmp_path / "navigator.yaml")}
    # the stand-in navigator serves a queue of its own (its workflow type is the real one's name)
    stuck = Worker(client, task_queue=f"{task_queue}-stuck", workflows=[NavigatorThatNoLongerReplays],
                   workflow_failure_exception_types=WORKFLOW_FAILURE_EXCEPTION_TYPES)
    async with build_worker(client, task_queue, activities=activities), stuck:
        yield env


async def test_a_workflow_code_error_fails_the_run_with_the_error(served: dict[str, str], client: Client,
                                                                  task_queue: str, tmp_path: Path) -> None:
    # what `--budget-usd 0.0000001` sent before the CLI validated budgets: a model built without validation
    request = ExplorationRequest.model_construct(**{
        **ExplorationRequest(repo_path=str(FIXTURE_REPO), goal="x y", out_dir=str(tmp_path / "out")).__dict__,
        "budget_usd": Decimal("0.0000001")})
    wid = f"nav-wedge-{uuid.uuid4().hex[:8]}"
    handle = await client.start_workflow("NavigatorWorkflow", request, id=wid, task_queue=task_queue,
                                         result_type=ExplorationResult, execution_timeout=timedelta(minutes=2))
    with pytest.raises(WorkflowFailureError) as failed:
        await asyncio.wait_for(handle.result(), timeout=30)  # before: the task was retried until the timeout
    cause = str(getattr(failed.value.cause, "message", failed.value.cause))
    # the worker's own input model refuses it now (RunUsd); before, BudgetLedger(max_micros=0) raised
    # inside the run: both are errors of workflow code, and both used to wedge the run
    assert "budget_usd" in cause and "0.000001" in cause, cause
    assert (await handle.describe()).status == WorkflowExecutionStatus.FAILED
    result = await ainvoke(["result", wid], served)
    assert result.exit_code == 1 and f"run {wid} failed" in result.stderr and "budget_usd" in result.stderr
    status = await ainvoke(["status", wid], served)
    assert status.exit_code == 1, status.stderr
    assert "· failed ·" in status.stdout and "budget_usd" in status.stderr


async def _until_stuck(client: Client, wid: str) -> str:
    for _ in range(120):
        why = await stuck_reason(client, wid)
        if why is not None:
            return why
        await asyncio.sleep(0.5)
    raise AssertionError(f"{wid} was never seen stuck")


async def test_a_run_whose_task_keeps_failing_is_reported_and_stop_ends_it(
    served: dict[str, str], client: Client, task_queue: str
) -> None:
    wid = f"nav-stuck-{uuid.uuid4().hex[:8]}"
    handle = await client.start_workflow("NavigatorWorkflow", id=wid, task_queue=f"{task_queue}-stuck",
                                         execution_timeout=timedelta(minutes=5))
    why = await _until_stuck(client, wid)
    assert STUCK_ERROR in why and "workflow task has failed" in why
    status = await ainvoke(["status", wid], served)
    assert status.exit_code == 1, (status.stdout, status.stderr)
    assert f"run {wid} cannot progress" in status.stderr and STUCK_ERROR in status.stderr
    waited = await asyncio.wait_for(ainvoke(["result", wid, "--wait"], served), timeout=60)
    assert waited.exit_code == 1 and f"run {wid} cannot progress" in waited.stderr, waited.stderr
    stop = await ainvoke(["stop", wid, "--reason", "enough"], served)
    assert stop.exit_code == 1, (stop.stdout, stop.stderr)
    assert "could not take the stop" in stop.stderr and "terminated instead" in stop.stderr
    desc = await handle.describe()
    assert desc.status == WorkflowExecutionStatus.TERMINATED
    after = await ainvoke(["status", wid], served)
    assert after.exit_code == 1 and "enough" in after.stderr and STUCK_ERROR in after.stderr, after.stderr
