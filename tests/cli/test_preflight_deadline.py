"""The preflight's deadline bounds the wait for a worker to *take* the check, not the check itself.

A worker's first check builds the provider and imports its SDK: 7 s for google-genai on a loaded
2-core machine, longer than the 5 s deadline, which used to cover the whole round trip. The CLI then
said "no worker answered" and started a run its worker had just refused (a flake of
``test_gemini_refused_when_the_worker_has_no_credentials`` under load). Here a real worker's check is
made slower than a shortened deadline on purpose; its answer must still decide. The other two cases
keep the deadline's job: nothing polling, or a worker that cannot run the check, still start the run
at once, and an untaken check is ended so no later worker runs it.
"""

from __future__ import annotations

import asyncio
import json
import time
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio import activity, workflow
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.worker import Worker

import durable_navigator.cli.preflight as preflight
from durable_navigator.activities.models.registry import ModelRegistry
from durable_navigator.activities.pricing_loader import TablePricer
from durable_navigator.activities.preflight import PreflightActivities
from durable_navigator.activities.artifacts import LocalArtifactStore
from durable_navigator.activities.navigator import NavigatorActivities
from durable_navigator.navcore.model.preflight import ACTIVITY_CHECK_MODEL, PREFLIGHT_WORKFLOW, ModelCheckInput, \
    ModelCheckResult
from durable_navigator.workers.worker import build_worker
from tests.cli.test_refusals import GEMINI, _runs_on
from tests.support.cli import FIXTURE_REPO, ainvoke

#: the shortened deadline for a worker to take the check, and how long the slow check takes
PICKUP = timedelta(seconds=1)
SLOW_CHECK_S = 3.0


def _env(client: Client, task_queue: str, tmp_path: Path) -> dict[str, str]:
    (tmp_path / "navigator.yaml").write_text("{}\n")
    return {"TEMPORAL_ADDRESS": client.service_client.config.target_host, "NAVIGATOR_TASK_QUEUE": task_queue,
            "NAVIGATOR_CONFIG": str(tmp_path / "navigator.yaml")}


async def _statuses(client: Client, task_queue: str) -> list[WorkflowExecutionStatus | None]:
    ids = await _runs_on(client, task_queue, PREFLIGHT_WORKFLOW)
    return [(await client.get_workflow_handle(i).describe()).status for i in ids]


async def test_a_check_slower_than_the_deadline_still_decides(
    client: Client, task_queue: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
        monkeypatch.delenv(key, raising=False)  # the worker runs in this process
    monkeypatch.setattr(preflight, "PREFLIGHT_TIMEOUT", PICKUP)  # the CLI runs in this process too
    real = PreflightActivities(registry=ModelRegistry(), pricer=TablePricer.load())

    @activity.defn(name=ACTIVITY_CHECK_MODEL)
    async def slow_check(inp: ModelCheckInput) -> ModelCheckResult:
        await asyncio.sleep(SLOW_CHECK_S)  # what a first SDK import costs on a loaded machine
        return await real.check_model(inp)

    activities = NavigatorActivities(LocalArtifactStore(tmp_path / "artifacts"), pricer=TablePricer.load())
    async with build_worker(client, task_queue, activities=activities, extra_activities=[slow_check]):
        result = await ainvoke(["explore", str(FIXTURE_REPO), "goal", "--model", GEMINI, "--detach", "--json",
                                "--out", str(tmp_path / "out")], _env(client, task_queue, tmp_path))
    if result.exit_code == 0:  # the old behaviour: a run started that its worker had refused
        await client.get_workflow_handle(json.loads(result.stdout)["workflow_id"]).terminate("test done")
    assert result.exit_code == 2, result.stderr
    assert result.stderr.startswith(
        f"Error: model '{GEMINI}' cannot be served by the worker(s) on task queue '{task_queue}': "
        "no Gemini credentials on the worker"), result.stderr
    assert await _runs_on(client, task_queue, "NavigatorWorkflow") == []
    assert await _statuses(client, task_queue) == [WorkflowExecutionStatus.COMPLETED]


async def test_an_untaken_check_is_ended_and_the_run_starts(
    client: Client, task_queue: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(preflight, "PREFLIGHT_TIMEOUT", PICKUP)
    started = time.monotonic()
    result = await ainvoke(["explore", str(FIXTURE_REPO), "goal", "--model", GEMINI, "--detach", "--json"],
                           _env(client, task_queue, tmp_path))
    assert result.exit_code == 0, result.stderr
    await client.get_workflow_handle(json.loads(result.stdout)["workflow_id"]).terminate("test done")
    assert f"no worker on task queue '{task_queue}' answered the model check (no worker took it within 1s)" \
        in result.stderr
    assert time.monotonic() - started < 30
    # ended, not left for the next worker to run (its execution timeout is only a backstop)
    assert await _statuses(client, task_queue) == [WorkflowExecutionStatus.TERMINATED]


@workflow.defn(name="SomethingElse", sandboxed=False)  # never runs; no sandbox re-import of this module
class _SomethingElse:
    """A worker that predates the preflight: it polls the queue but knows no ``NavigatorPreflight``."""

    @workflow.run
    async def run(self) -> None:
        """Never started by these tests."""


async def test_a_worker_that_cannot_run_the_check_does_not_hold_the_run(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    started = time.monotonic()
    async with Worker(client, task_queue=task_queue, workflows=[_SomethingElse]):
        result = await ainvoke(["explore", str(FIXTURE_REPO), "goal", "--model", GEMINI, "--detach", "--json"],
                               _env(client, task_queue, tmp_path))
    assert result.exit_code == 0, result.stderr
    await client.get_workflow_handle(json.loads(result.stdout)["workflow_id"]).terminate("test done")
    assert "could not run it" in result.stderr, result.stderr
    # it took the check, so the answer wait began; its failed task ended that wait long before its bound
    assert time.monotonic() - started < preflight.ANSWER_TIMEOUT.total_seconds() / 2
