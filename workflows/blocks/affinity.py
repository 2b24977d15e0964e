"""Host affinity without pinning: a run's index-bound activities go to the host whose index is warm.

Indexing a repository is the expensive part of a scan; renders, code tools, the map excerpt of a model
request (``model.prepare``), an investigation's evidence check (``investigate.check_evidence``), the
citation checks of a merge of findings (``research.aggregate``) and of the answer (``research.write_answer``)
and the result's re-render (``navigator.write_result``) then read the engine the scanning host keeps in
memory (``activities.engines.EngineCache``). Each worker also polls a queue only it polls
(``workers.worker.host_queue``); each of these activities names it in its result, and the run
(:attr:`RunStatus.host_queue`, carried across continue-as-new) sends its next one there — Temporal's
worker-specific task queues.

Nothing is pinned: an activity on a host queue waits at most ``host_start_timeout_s`` to start. If the
host is gone (stopped, killed, scaled away) that schedule-to-start timeout fails the activity, and it
runs once more on the shared queue, where any worker takes it, rebuilds what it needs (the index, from
its parse cache or from scratch) and names its own queue, which the run adopts. A host that refuses the
task because it cannot serve the run's model (``not_served_here``: e.g. a worker restarted with another
configuration under the same identity) is left the same way, at once: one worker polls a host queue, so
asking it again would be refused again. The request of a model call (``model.prepare``) goes to the host;
the call itself (``model.request``) never does: it is a separate activity, recorded in history, so a host
lost never re-pays one (the ``offline`` model's calls read the index of whichever worker takes them).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, TypeVar

from temporalio import workflow
from temporalio.api.enums.v1 import TimeoutType
from temporalio.exceptions import ActivityError, TimeoutError

with workflow.unsafe.imports_passed_through():
    from durable_navigator.navcore.navigator.state import RunStatus
    from durable_navigator.workflows.blocks.options import ActivityOptions, not_served_here, run_activity

__all__ = ["run_on_host", "host_gone"]

T = TypeVar("T")


def host_gone(err: ActivityError) -> bool:
    """The activity waited on a host's queue and no worker started it in time (the host is gone)."""
    cause = err.cause
    return isinstance(cause, TimeoutError) and cause.type == TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_START


async def run_on_host(run: RunStatus, start_timeout: timedelta, name: str, arg: Any, result_type: type[T],
                      options: ActivityOptions, summary: str) -> T:
    """Run an index-bound activity on ``run.host_queue`` (the shared queue while it is empty), falling back
    to the shared queue once when the host does not start it within ``start_timeout`` or refuses it as
    :func:`~workflows.blocks.options.not_served_here`; the run then follows the host named by the result
    (``host_queue`` of a scan, render, tool, prepared model request, evidence check or merge of findings)."""
    queue = run.host_queue
    if not queue:
        out = await run_activity(name, arg, result_type, options, summary)
    else:
        try:
            out = await run_activity(name, arg, result_type, options, summary, task_queue=queue,
                                     schedule_to_start=start_timeout)
        except ActivityError as err:
            if host_gone(err):
                why = f"did not start it in {start_timeout}"
            elif not_served_here(err):
                why = "cannot serve the run's model"
            else:
                raise
            workflow.logger.info("%s: host queue %s %s; any worker takes it", name, queue, why)
            run.host_queue = ""
            out = await run_activity(name, arg, result_type, options, f"{summary[:150]} · on another host")
    named = getattr(out, "host_queue", "")
    if isinstance(named, str) and named:
        run.host_queue = named
    return out
