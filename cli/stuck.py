"""A run that cannot progress: its workflow task fails on every attempt. Notice it, say why, end it.

Workflow code that raises a non-Temporal exception fails the run (``workers/failures.py``), but
some failures stay *workflow-task* failures, which Temporal retries without end: a history that
no longer replays under the worker's code (``NondeterminismError``), a sandbox violation, a
worker whose code is broken in another way. The run is then open, but nothing happens: queries
fail ("Workflow Task in failed state"), signals are recorded and never processed.

:func:`stuck_reason` tells such a run from a healthy one with the server's own records: the
description's pending workflow task is on attempt 2 or more, and the newest workflow-task event
of the history is a ``WorkflowTaskFailed`` whose cause is a worker failure (read from the end of
the history, one short page). ``explore`` / ``ask`` / ``investigate``, ``status``, ``result --wait``
and the MCP tools report it with the error instead of waiting; ``stop`` ends it
(:func:`terminate_stuck`): a stop signal can never be processed by such a run, so it is
terminated, with the reason and the error, and without a context pack.
"""

from __future__ import annotations

import asyncio
from typing import Any

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import EventType, WorkflowTaskFailedCause
from temporalio.api.workflowservice.v1 import GetWorkflowExecutionHistoryReverseRequest
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError
from temporalio.service import RPCError

from durable_navigator.cli.common import cancel_and_wait
from durable_navigator.cli.errors import CliError, ExitCode

__all__ = ["RunStuckError", "stuck_reason", "stuck_message", "terminate_stuck", "result_unless_stuck", "closed_error",
           "STUCK_CHECK_EVERY_S"]

#: how often a waiting command checks whether the run it waits for is stuck
STUCK_CHECK_EVERY_S = 3.0
#: history events read from the end to find the newest workflow-task outcome
_PAGE = 100
_PAGES = 5
#: failure causes of a worker that ran the task and failed it (not the server's own bookkeeping,
#: such as a signal arriving during a task: UNHANDLED_COMMAND, RESET_STICKY_TASK_QUEUE)
_WORKER_CAUSES = frozenset({
    WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_WORKFLOW_WORKER_UNHANDLED_FAILURE,
    WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR,
    WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_BAD_BINARY,
})
_MESSAGE_CHARS = 300


class RunStuckError(CliError):
    """The run is open but its workflow task fails on every attempt (exit 1: it cannot finish)."""

    kind = "RunStuckError"
    exit_code = ExitCode.RUN_FAILED


async def _last_task_failure(client: Client, workflow_id: str, run_id: str) -> str | None:
    """The error of the newest workflow-task outcome when it is a worker's failure, else ``None``."""
    token = b""
    for _ in range(_PAGES):
        response = await client.workflow_service.get_workflow_execution_history_reverse(
            GetWorkflowExecutionHistoryReverseRequest(
                namespace=client.namespace, execution=WorkflowExecution(workflow_id=workflow_id, run_id=run_id),
                maximum_page_size=_PAGE, next_page_token=token))
        for event in response.history.events:
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
                return None
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
                attrs = event.workflow_task_failed_event_attributes
                if attrs.cause not in _WORKER_CAUSES:
                    return None
                failure = attrs.failure
                kind = f"{failure.application_failure_info.type}: " if failure.application_failure_info.type else ""
                return " ".join(f"{kind}{failure.message}".split())[:_MESSAGE_CHARS] or "no message"
        token = response.next_page_token
        if not token:
            return None
    return None


async def stuck_reason(client: Client, workflow_id: str) -> str | None:
    """Why the running run ``workflow_id`` cannot progress, or ``None`` (healthy, closed, or unknown)."""
    try:
        desc = await client.get_workflow_handle(workflow_id).describe()
        raw = desc.raw_description
        if desc.status != WorkflowExecutionStatus.RUNNING or not raw.HasField("pending_workflow_task"):
            return None
        attempt = raw.pending_workflow_task.attempt
        if attempt < 2:
            return None
        error = await _last_task_failure(client, workflow_id, desc.run_id or "")
    except RPCError:
        return None  # not a verdict on the run: the caller's own calls report an unreachable server
    if error is None:
        return None
    return f"its workflow task has failed {attempt - 1} time(s) in a row (Temporal retries it): {error}"


def stuck_message(workflow_id: str, reason: str) -> str:
    """The one line a waiting command ends with."""
    return (f"run {workflow_id} cannot progress: {reason}; it stays open: fix the worker's code and it resumes, "
            f"or `navigator stop {workflow_id}` ends it")


async def terminate_stuck(client: Client, workflow_id: str, reason: str, sender: str) -> str | None:
    """Terminate ``workflow_id`` when it is stuck (a stop signal would never be processed); the reason it
    was stuck, or ``None`` when it is not (the signal takes effect)."""
    why = await stuck_reason(client, workflow_id)
    if why is None:
        return None
    handle: Any = client.get_workflow_handle(workflow_id)
    await handle.terminate(reason=f"stop by {sender} ({reason}) on a run that cannot progress: {why}"[:1000])
    return why


async def result_unless_stuck(client: Client, handle: Any) -> Any:
    """The run's result; a run whose workflow task keeps failing never closes: ``RunStuckError`` says why."""
    closed = asyncio.ensure_future(handle.result())
    try:
        while not closed.done():
            await asyncio.wait({closed}, timeout=STUCK_CHECK_EVERY_S)
            if not closed.done():
                why = await stuck_reason(client, handle.id)
                if why is not None:
                    raise RunStuckError(stuck_message(handle.id, why))
        return closed.result()
    finally:
        await cancel_and_wait(closed)


async def closed_error(handle: Any) -> str:
    """Why a run that did not complete ended (failed, terminated, timed out, cancelled), from its history."""
    try:
        await handle.result()
    except WorkflowFailureError as exc:
        cause = getattr(exc.cause, "message", None) or str(exc.cause or exc)
        return f"run {handle.id} did not finish: {' '.join(cause.split())}"
    except RPCError as exc:
        return f"run {handle.id} did not finish; its outcome is unreadable: {exc.message[:200]}"
    return f"run {handle.id} did not finish"
