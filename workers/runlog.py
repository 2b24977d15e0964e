"""One log line per workflow run: started, finished, failed (a worker interceptor).

A worker operator sees every run the worker executes without reading histories::

    run started: NavigatorWorkflow nav-budgetkit-1a2b3c4d (run 0193…, task queue navigator)
    run finished: NavigatorWorkflow nav-budgetkit-1a2b3c4d in 14.2s: finalized, cost 0.0000 USD
    run failed: NavigatorWorkflow nav-x in 0.4s: scan failed: repository /gone does not exist …

The lines go through ``workflow.logger``, which is silent while a run is replayed
(a worker restart does not log old runs again) and carries the workflow ids into
structlog's output. The duration is ``workflow.now()`` minus the run's start time:
deterministic, like everything else on the workflow path. A run that continues as
new logs that instead of finishing; a bug that fails a workflow *task* (retried
by Temporal, not a failed run) is logged as such.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from temporalio import workflow
from temporalio.exceptions import FailureError
from temporalio.worker import (
    ExecuteWorkflowInput,
    Interceptor,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
)

__all__ = ["RunLogInterceptor", "outcome_text"]

#: failure messages are cut to this many characters in the log line
MESSAGE_CHARS = 300


def outcome_text(result: Any) -> str:
    """What a run returned, in a few words (stop reason and cost for an exploration)."""
    parts = []
    reason = getattr(result, "stop_reason", None)
    if reason is not None:
        parts.append(str(getattr(reason, "value", reason)))
    cost = getattr(result, "cost_usd", None)
    if cost is None and hasattr(result, "spent_usd"):
        cost = result.spent_usd
    if cost is not None:
        parts.append(f"cost {cost:.4f} USD")
    outcomes = getattr(result, "outcomes", None)
    if isinstance(outcomes, list):
        parts.append(f"{len(outcomes)} jobs")
    return ", ".join(parts) or type(result).__name__


def _interceptor_for(failure_types: tuple[type[BaseException], ...]) -> type[WorkflowInboundInterceptor]:
    class _RunLog(WorkflowInboundInterceptor):
        async def execute_workflow(self, input: ExecuteWorkflowInput) -> Any:
            info = workflow.info()
            name = f"{info.workflow_type} {info.workflow_id}"
            workflow.logger.info("run started: %s (run %s, task queue %s)", name, info.run_id, info.task_queue)
            try:
                result = await super().execute_workflow(input)
            except workflow.ContinueAsNewError:
                workflow.logger.info("run continued as new: %s after %s", name, _elapsed(info))
                raise
            except asyncio.CancelledError:
                workflow.logger.info("run cancelled: %s after %s", name, _elapsed(info))
                raise
            except GeneratorExit:
                # the worker evicted the run (shutdown, cache): its coroutine is being closed outside
                # the workflow's event loop, where nothing may be logged; the run itself goes on
                raise
            except BaseException as exc:
                message = " ".join(str(exc).split())[:MESSAGE_CHARS]
                if isinstance(exc, (FailureError, *failure_types)):
                    workflow.logger.warning("run failed: %s in %s: %s", name, _elapsed(info), message)
                else:
                    workflow.logger.warning("workflow task failed (Temporal retries it): %s: %s: %s", name,
                                            type(exc).__name__, message)
                raise
            workflow.logger.info("run finished: %s in %s: %s", name, _elapsed(info), outcome_text(result))
            return result

    return _RunLog


def _elapsed(info: workflow.Info) -> str:
    return f"{(workflow.now() - info.start_time).total_seconds():.1f}s"


class RunLogInterceptor(Interceptor):
    """Logs each run's start and end; ``failure_types`` are the worker's workflow-failure exceptions."""

    def __init__(self, failure_types: Sequence[type[BaseException]] = ()) -> None:
        self._class = _interceptor_for(tuple(failure_types))

    def workflow_interceptor_class(self, input: WorkflowInterceptorClassInput) -> type[WorkflowInboundInterceptor]:
        """The per-run interceptor."""
        return self._class
