"""Host affinity without pinning: a run's index-bound activities go to the host whose index is warm.

Indexing a repository is the expensive part of a scan; renders and code tools then read the engine
the scanning host keeps in memory (``activities.engines.EngineCache``). Each worker also polls a queue
only it polls (``workers.worker.host_queue``); the scan, every render and every code tool name it in
their result, and the run (:attr:`RunStatus.host_queue`, carried across continue-as-new) sends its next
render or tool there — Temporal's worker-specific task queues.

Nothing is pinned: an activity on a host queue waits at most ``host_start_timeout_s`` to start. If the
host is gone (stopped, killed, scaled away) that schedule-to-start timeout fails the activity, and it
runs once more on the shared queue, where any worker takes it, rebuilds what it needs (the index, from
its parse cache or from scratch) and names its own queue, which the run adopts. Model calls never go to
a host queue: they are separate activities, recorded in history, so a host lost never re-pays one.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, TypeVar

from temporalio import workflow
from temporalio.api.enums.v1 import TimeoutType
from temporalio.exceptions import ActivityError, TimeoutError

with workflow.unsafe.imports_passed_through():
    from durable_navigator.navcore.navigator.state import RunStatus
    from durable_navigator.workflows.blocks.options import ActivityOptions, run_activity

__all__ = ["run_on_host", "host_gone"]

T = TypeVar("T")


def host_gone(err: ActivityError) -> bool:
    """The activity waited on a host's queue and no worker started it in time (the host is gone)."""
    cause = err.cause
    return isinstance(cause, TimeoutError) and cause.type == TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_START


async def run_on_host(run: RunStatus, start_timeout: timedelta, name: str, arg: Any, result_type: type[T],
                      options: ActivityOptions, summary: str) -> T:
    """Run an index-bound activity on ``run.host_queue`` (the shared queue while it is empty), falling back
    to the shared queue once when the host does not start it within ``start_timeout``; the run then
    follows the host named by the result (``host_queue`` of a scan, render or tool result)."""
    queue = run.host_queue
    if not queue:
        out = await run_activity(name, arg, result_type, options, summary)
    else:
        try:
            out = await run_activity(name, arg, result_type, options, summary, task_queue=queue,
                                     schedule_to_start=start_timeout)
        except ActivityError as err:
            if not host_gone(err):
                raise
            workflow.logger.info("%s: host queue %s did not start it in %s; any worker takes it", name, queue,
                                 start_timeout)
            run.host_queue = ""
            out = await run_activity(name, arg, result_type, options, f"{summary[:150]} · on another host")
    named = getattr(out, "host_queue", "")
    if isinstance(named, str) and named:
        run.host_queue = named
    return out
