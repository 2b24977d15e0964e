"""Two hosts on one dev server, as ``navigator worker`` runs them (the shared task queue + each host's own
queue), told apart by their client identity; who ran what is read from the history's ``ActivityTaskStarted``
events, as the Web UI shows it (issue 31: host affinity without pinning)."""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from durable_navigator.activities.navigator import NavigatorActivities
from durable_navigator.workers.converter import DATA_CONVERTER
from durable_navigator.workers.worker import HOST_ACTIVITIES, build_host_worker, build_worker

__all__ = ["HOSTS", "Run", "client_as", "start_host", "activity_runs", "host_bound", "opened"]

HOSTS = ("host-a", "host-b")
#: (activity type, task queue it was scheduled on, identity of the worker that started it)
Run = tuple[str, str, str]


async def client_as(client: Client, identity: str) -> Client:
    """A client of the same server whose workers identify as ``identity`` (their host queue is named by it)."""
    return await Client.connect(client.service_client.config.target_host, namespace=client.namespace,
                                data_converter=DATA_CONVERTER, identity=identity)


async def start_host(stack: AsyncExitStack, client: Client, task_queue: str, acts: NavigatorActivities) -> None:
    """One host: its own activities (engine cache), both queues polled until ``stack`` closes."""
    await stack.enter_async_context(build_worker(client, task_queue, activities=acts))
    await stack.enter_async_context(build_host_worker(client, task_queue, acts))


async def activity_runs(handle: Any) -> list[Run]:
    """Every started activity of the run, in order (an activity that never started is not listed)."""
    scheduled: dict[int, tuple[str, str]] = {}
    runs: list[Run] = []
    async for e in handle.fetch_history_events():
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            a = e.activity_task_scheduled_event_attributes
            scheduled[e.event_id] = (a.activity_type.name, a.task_queue.name)
        elif e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            s = e.activity_task_started_event_attributes
            runs.append((*scheduled[s.scheduled_event_id], s.identity))
    return runs


def host_bound(runs: list[Run]) -> list[Run]:
    """The runs of index-bound activities (the ones a host's own queue serves)."""
    return [r for r in runs if r[0] in HOST_ACTIVITIES or r[0].startswith("tools.")]


def opened(acts: NavigatorActivities, repo_root: str) -> bool:
    """Whether this host's engine cache has the repository open (it indexed it)."""
    return acts.engines.peek(repo_root) is not None
