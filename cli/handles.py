"""Workflow handles for the CLI: describe, query, signal — with errors mapped to exit codes.

The CLI never imports the workflow class: it talks to runs by their stable
public names (workflow type, signal / query / update names from
``navcore.navigator.messages``) through the client, like any other Temporal client would.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any, TypeVar

from pydantic import BaseModel
from temporalio.client import (
    Client,
    WorkflowExecutionDescription,
    WorkflowExecutionStatus,
    WorkflowHandle,
    WorkflowQueryFailedError,
    WorkflowQueryRejectedError,
    WorkflowUpdateFailedError,
)
from temporalio.service import RPCError, RPCStatusCode

from durable_navigator.activities.artifacts import ArtifactStore
from durable_navigator.cli.errors import CliError, RunNotFoundError, TemporalUnreachableError
from durable_navigator.navcore.navigator.report import HISTORY_REASONING_CHARS, TurnReport
from durable_navigator.navcore.run_kinds import EXPLORE
from durable_navigator.navtypes.errors import NavigatorError

__all__ = [
    "WORKFLOW_TYPE",
    "QUERY_TIMEOUT",
    "describe_run",
    "query_run",
    "signal_run",
    "update_run",
    "is_running",
    "status_name",
    "search_attribute",
    "with_full_reasoning",
]

#: the navigator workflow's registered type name (public API, like the message names; every kind: navcore/run_kinds.py)
WORKFLOW_TYPE = EXPLORE.workflow_type
#: a query needs a worker to answer; don't hang a terminal when none polls
QUERY_TIMEOUT = timedelta(seconds=10)

M = TypeVar("M")

_NO_WORKER_CODES = {
    RPCStatusCode.DEADLINE_EXCEEDED,
    RPCStatusCode.UNAVAILABLE,
    RPCStatusCode.FAILED_PRECONDITION,
}


def status_name(status: WorkflowExecutionStatus | None) -> str:
    """``RUNNING`` → ``running`` (what ``status`` / ``ls`` print)."""
    return status.name.lower() if status is not None else "unknown"


def is_running(desc: WorkflowExecutionDescription) -> bool:
    """True while the run can still take signals."""
    return desc.status == WorkflowExecutionStatus.RUNNING


def search_attribute(desc: Any, name: str) -> Any:
    """A custom search attribute's value from a description / list entry, or ``None``."""
    for pair in desc.typed_search_attributes:
        if pair.key.name == name:
            return pair.value
    return None


def _map_rpc(exc: RPCError, workflow_id: str, what: str) -> CliError:
    if exc.status == RPCStatusCode.NOT_FOUND:
        if "completed" in exc.message or "closed" in exc.message:
            return RunNotFoundError(
                f"run {workflow_id} is already closed; {what} only reaches running runs "
                f"(see `navigator result {workflow_id}`)"
            )
        return RunNotFoundError(f"no run with id {workflow_id}; list runs with `navigator ls`")
    if exc.status in _NO_WORKER_CODES:
        return TemporalUnreachableError(
            f"no worker answered the {what} for {workflow_id} ({exc.message[:120]}); start "
            "`navigator worker` against the same server and task queue"
        )
    return TemporalUnreachableError(f"Temporal refused the {what} for {workflow_id}: {exc.message[:200]}")


async def describe_run(
    client: Client, workflow_id: str, result_type: type | None = None
) -> tuple[WorkflowHandle[Any, Any], WorkflowExecutionDescription]:
    """The handle (typed by ``result_type``) and description of the latest run of ``workflow_id``."""
    handle = client.get_workflow_handle(workflow_id, result_type=result_type)
    try:
        return handle, await handle.describe()
    except RPCError as exc:
        raise _map_rpc(exc, workflow_id, "describe") from None


async def query_run(
    handle: WorkflowHandle[Any, Any], name: str, result_type: type[M], timeout: timedelta = QUERY_TIMEOUT
) -> M:
    """Run a query by name with a bounded wait (a query waits for a worker to answer it)."""
    try:
        return await handle.query(name, result_type=result_type, rpc_timeout=timeout)
    except WorkflowQueryRejectedError as exc:
        raise RunNotFoundError(f"run {handle.id} rejected the query ({exc.status}); it may be closed") from None
    except WorkflowQueryFailedError as exc:
        if "expected but not found" in exc.message:
            # a run of another type (a batch answers only `get_progress`): not a worker problem
            raise CliError(f"run {handle.id} answers no {name} query: it is not an exploration, research run or "
                           f"investigation (a batch? `navigator batch status {handle.id}`)") from None
        raise CliError(f"query {name} failed on {handle.id}: {exc.message}; check the worker logs") from None
    except RPCError as exc:
        raise _map_rpc(exc, handle.id, f"query {name}") from None


async def signal_run(client: Client, workflow_id: str, name: str, payload: BaseModel) -> None:
    """Send one signal (one model argument, as every message carries)."""
    handle = client.get_workflow_handle(workflow_id)
    try:
        await handle.signal(name, payload)
    except RPCError as exc:
        raise _map_rpc(exc, workflow_id, f"signal {name}") from None


async def update_run(
    client: Client, workflow_id: str, name: str, payload: BaseModel, result_type: type[M], what: str | None = None
) -> M:
    """Execute an update; a validator rejection becomes a bad-input error (exit 2) naming ``what``."""
    handle = client.get_workflow_handle(workflow_id)
    try:
        return await handle.execute_update(name, payload, result_type=result_type)
    except WorkflowUpdateFailedError as exc:
        cause = exc.cause
        message = getattr(cause, "message", None) or str(cause or exc)
        raise CliError(f"{what or name} refused by {workflow_id}: {message}") from None
    except RPCError as exc:
        raise _map_rpc(exc, workflow_id, f"update {name}") from None


def with_full_reasoning(report: TurnReport, store: ArtifactStore) -> TurnReport:
    """``report`` with the last step's reasoning untrimmed, read from the artifact store.

    The workflow's history keeps a decision's reasoning trimmed (the full decision is an
    artifact in ``store``, the configured one: the workers' bucket, or the local directory an
    in-process or local worker wrote). When it cannot be read the trimmed text stays, marked
    with ``…`` when cut: this is display only.
    """
    ref = report.reasoning_ref
    if ref is None:
        return report
    try:
        decision = json.loads(store.get_bytes(ref).decode("utf-8"))
    except (OSError, ValueError, NavigatorError):  # OSError: not there, or the object store did not answer
        decision = None
    full = decision.get("reasoning") if isinstance(decision, dict) else None
    if isinstance(full, str) and full.strip() and full.startswith(report.reasoning[:40]):
        return report.model_copy(update={"reasoning": full})
    if len(report.reasoning) >= HISTORY_REASONING_CHARS and not report.reasoning.endswith("…"):
        return report.model_copy(update={"reasoning": report.reasoning + "…"})
    return report
