"""Activity options of every workflow, in one place.

Every ``execute_activity`` of the project takes its timeouts, heartbeat
timeout and retry policy from here; non-retryable error types are the
project's domain errors (they cannot succeed on retry).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar, cast

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from durable_navigator.navcore.model.preflight import NOT_SERVED_HERE_TYPE, REDISPATCH_DELAY, SERVE_ELSEWHERE_WINDOW

T = TypeVar("T")

__all__ = [
    "ActivityOptions",
    "NON_RETRYABLE",
    "SHORT",
    "SCAN",
    "PREPARE",
    "TOOL",
    "RESULT",
    "run_activity",
    "not_served_here",
    "Scheduler",
]

#: domain errors: a retry cannot fix bad input, configuration, a missing model or budget
NON_RETRYABLE = ["NavigatorError", "ConfigError", "RepoError", "FlightPlanError", "BudgetError", "ModelError",
                 "ArtifactError", "PathEscapeError", "PlanParseError"]


#: Retries of a failed (not domain-failed) activity ride out an outage of the object store or a host's
#: network of about a minute: waits of 1, 2, 4, 8, 16, 20, 20 s between the 8 attempts (71 s). Three
#: attempts 1 and 2 s apart (Temporal's default backoff) failed a run when SeaweedFS restarted (~20 s):
#: the fleet soak's finding, tests/cli/test_store_outage.py.
_FIRST_RETRY = timedelta(seconds=1)
_LONGEST_RETRY = timedelta(seconds=20)
OUTAGE_ATTEMPTS = 8


@dataclass(frozen=True)
class ActivityOptions:
    """Timeouts and retry policy of one kind of activity."""

    start_to_close: timedelta
    heartbeat: timedelta | None = None
    max_attempts: int = OUTAGE_ATTEMPTS

    def kwargs(self) -> dict[str, Any]:
        """Keyword arguments of ``workflow.execute_activity``."""
        return {
            "start_to_close_timeout": self.start_to_close,
            "heartbeat_timeout": self.heartbeat,
            "retry_policy": RetryPolicy(initial_interval=_FIRST_RETRY, backoff_coefficient=2.0,
                                        maximum_interval=_LONGEST_RETRY, maximum_attempts=self.max_attempts,
                                        non_retryable_error_types=NON_RETRYABLE),
        }


#: these heartbeat every few seconds: a killed worker is noticed fast
_WORK_HEARTBEAT = timedelta(seconds=30)
#: repo-map renders, result writing
SHORT = ActivityOptions(timedelta(minutes=2), _WORK_HEARTBEAT)
#: indexing a large repository on a cold cache takes a while
SCAN = ActivityOptions(timedelta(minutes=15), _WORK_HEARTBEAT)
#: building a model request (may render a map excerpt)
PREPARE = ActivityOptions(timedelta(minutes=5), _WORK_HEARTBEAT)
#: one code-tool call: an index lookup or a file read
TOOL = ActivityOptions(timedelta(minutes=1), None, max_attempts=2)
#: writing the result files
RESULT = SHORT


#: how a block schedules an activity that may go to a host's queue: ``run_activity``'s signature (a run
#: passes its ``_on_host``, :func:`workflows.blocks.affinity.run_on_host` on the run's status)
Scheduler = Callable[[str, Any, type[Any], ActivityOptions, str], Awaitable[Any]]


def not_served_here(err: ActivityError) -> bool:
    """The worker that took the task cannot serve the run's model (another worker of the queue may)."""
    return isinstance(err.cause, ApplicationError) and err.cause.type == NOT_SERVED_HERE_TYPE


async def run_activity(name: str, arg: Any, result_type: type[T], options: ActivityOptions, summary: str, *,
                       task_queue: str | None = None, schedule_to_start: timedelta | None = None) -> T:
    """``workflow.execute_activity`` with the options of ``options`` and a readable summary, typed as
    ``result_type`` (the data converter builds that type from the payload).

    A task refused as :func:`not_served_here` (final for its scheduling: not retried in place) is scheduled again, for up to
    ``SERVE_ELSEWHERE_WINDOW``: each scheduling goes to whichever worker polls, so a run is not failed
    by one worker with an older configuration while another can serve it (``navcore.model.preflight``).
    ``task_queue`` / ``schedule_to_start``: a host's own queue and how long to wait for it to start the task
    (:mod:`workflows.blocks.affinity`); by default the run's own queue, no such limit. A refusal on a host's
    queue is raised at once: one worker polls it, so scheduling there again would only ask it again (the
    caller, :func:`~workflows.blocks.affinity.run_on_host`, sends the task to the shared queue instead).
    """
    routed: dict[str, Any] = {}
    if task_queue:
        routed = {"task_queue": task_queue, "schedule_to_start_timeout": schedule_to_start}
    deadline = workflow.now() + SERVE_ELSEWHERE_WINDOW
    while True:
        try:
            got = await workflow.execute_activity(name, arg, result_type=result_type, summary=summary[:200],
                                                  **options.kwargs(), **routed)
            return cast(T, got)
        except ActivityError as err:
            if not not_served_here(err) or task_queue or workflow.now() >= deadline:
                raise
        await workflow.sleep(REDISPATCH_DELAY, summary=f"{summary[:120]}: for a worker that serves the model")
