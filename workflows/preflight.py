"""``NavigatorPreflight``: ask a worker on this task queue whether it can serve the run's models.

The CLI runs it, with a short deadline for a worker to take it, before it starts an exploration or a
batch whose workers may live elsewhere. It schedules ``navigator.check_model``
(by name) on its own task queue — the queue the real run will use — so the
worker that answers has the credentials, prices and files the run would get.
One attempt, no retries: a refused model is an answer, not a failure.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from durable_navigator.navcore.model.preflight import (
        ACTIVITY_CHECK_MODEL,
        CHECK_TIMEOUT,
        PREFLIGHT_WORKFLOW,
        ModelCheckInput,
        ModelCheckResult,
    )

__all__ = ["PreflightWorkflow", "CHECK_TIMEOUT"]

_ONE_ATTEMPT = RetryPolicy(maximum_attempts=1)


@workflow.defn(name=PREFLIGHT_WORKFLOW)
class PreflightWorkflow:
    """One ``navigator.check_model`` activity; its verdicts are the result."""

    @workflow.run
    async def run(self, inp: ModelCheckInput) -> ModelCheckResult:
        """Check ``inp.models`` on a worker of this task queue."""
        return await workflow.execute_activity(
            ACTIVITY_CHECK_MODEL,
            inp,
            result_type=ModelCheckResult,
            start_to_close_timeout=CHECK_TIMEOUT,
            retry_policy=_ONE_ATTEMPT,
            summary=f"can this worker serve {', '.join(inp.models)[:200]}?",
        )
