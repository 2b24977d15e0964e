"""The model check asks each listed worker by name when the first answer refuses (a CI flake).

``test_worker_capabilities`` failed once in CI: both workers polled the queue, the current one
served the model, yet the CLI refused it, naming only the older worker. The check used to be
repeated on the shared task queue, where whichever worker polls next takes it — the same worker
every time, as it happened — and the loop stopped on the first unanswered repeat. Here the queue
lists a worker that no longer takes shared tasks (it polled a moment ago, so ``DescribeTaskQueue``
still names it) but still serves its own check queue: a check on the shared queue can only reach
the older worker, so only a check by name finds the one that serves the model.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client

from durable_navigator.cli.config import load_config
from durable_navigator.navcore.model.preflight import PREFLIGHT_WORKFLOW, worker_queue
from durable_navigator.workers.converter import DATA_CONVERTER
from durable_navigator.workers.worker import build_activities, build_check_worker, build_worker
from tests.cli.test_explore_openai import MODEL, SECRET, _endpoint_yaml
from tests.cli.test_refusals import _runs_on
from tests.support.cli import FIXTURE_REPO, ainvoke


async def _listed(client: Client, task_queue: str) -> set[str]:
    request = DescribeTaskQueueRequest(namespace="default", task_queue=TaskQueue(name=task_queue),
                                       task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY)
    return {p.identity for p in (await client.workflow_service.describe_task_queue(request)).pollers}


async def _until_listed(client: Client, task_queue: str, identity: str) -> None:
    """Until the queue lists ``identity`` as polling (its first poll reaches the server in milliseconds)."""
    for _ in range(200):
        if identity in await _listed(client, task_queue):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{identity} never listed as polling {task_queue}")


async def test_a_worker_the_shared_queue_does_not_reach_is_asked_by_name(
    client: Client, task_queue: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOCAL_LLM_KEY", SECRET)  # the workers run in this process
    config = tmp_path / "navigator.yaml"
    config.write_text("endpoints:\n" + _endpoint_yaml("http://127.0.0.1:9/v1"))
    endpoints = load_config(config, env={}).endpoints
    target = client.service_client.config.target_host
    older = await Client.connect(target, identity="older@host-a", data_converter=DATA_CONVERTER)
    current = await Client.connect(target, identity="current@host-b", data_converter=DATA_CONVERTER)
    current_acts = build_activities(tmp_path / "current", endpoints=endpoints)
    # the current worker polls the shared queue for a moment (so the queue lists it), then only its own
    async with build_worker(current, task_queue, activities=current_acts):
        await _until_listed(client, task_queue, "current@host-b")
    env = {"TEMPORAL_ADDRESS": target, "NAVIGATOR_TASK_QUEUE": task_queue, "NAVIGATOR_CONFIG": str(config)}
    async with build_worker(older, task_queue, activities=build_activities(tmp_path / "older")), \
            build_check_worker(current, task_queue, current_acts):
        await _until_listed(client, task_queue, "older@host-a")
        assert "current@host-b" in await _listed(client, task_queue)
        result = await ainvoke(["explore", str(FIXTURE_REPO), "goal", "--model", MODEL, "--detach", "--json",
                                "--out", str(tmp_path / "out")], env)
    if result.exit_code == 0:
        await client.get_workflow_handle(json.loads(result.stdout)["workflow_id"]).terminate("test done")
    assert result.exit_code == 0, result.stderr  # before: refused, as only the older worker was ever asked
    assert (f"note: worker older@host-a on task queue '{task_queue}' cannot serve '{MODEL}' "
            "(unknown model endpoint 'local'") in result.stderr, result.stderr
    # one check on the shared queue (the older worker's), one by name on the current worker's own queue
    assert len(await _runs_on(client, task_queue, PREFLIGHT_WORKFLOW)) == 1
    assert len(await _runs_on(client, worker_queue(task_queue, "current@host-b"), PREFLIGHT_WORKFLOW)) == 1


async def test_a_listed_worker_that_is_gone_does_not_hold_a_refusal(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    """A worker the queue still lists but that stopped: its check by name is not taken; the refusal stands."""
    target = client.service_client.config.target_host
    gone = await Client.connect(target, identity="gone@host-c", data_converter=DATA_CONVERTER)
    async with build_worker(gone, task_queue, activities=build_activities(tmp_path / "gone")):
        await _until_listed(client, task_queue, "gone@host-c")
    config = tmp_path / "navigator.yaml"
    config.write_text("endpoints:\n" + _endpoint_yaml("http://127.0.0.1:9/v1"))
    env = {"TEMPORAL_ADDRESS": target, "NAVIGATOR_TASK_QUEUE": task_queue, "NAVIGATOR_CONFIG": str(config)}
    async with build_worker(client, task_queue, activities=build_activities(tmp_path / "older")):
        await _until_listed(client, task_queue, client.identity)
        result = await ainvoke(["explore", str(FIXTURE_REPO), "goal", "--model", MODEL, "--detach", "--json",
                                "--out", str(tmp_path / "out")], env)
    assert result.exit_code == 2, result.stderr
    assert f"Error: model '{MODEL}' cannot be served by the worker(s) on task queue '{task_queue}': " \
           "unknown model endpoint 'local'" in result.stderr, result.stderr
    assert await _runs_on(client, task_queue, "NavigatorWorkflow") == []
