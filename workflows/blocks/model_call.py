"""Every model call of every workflow: one mechanism, priced in one place.

``ModelCaller.call(model, spec)``:

1. ``model.prepare`` builds and stores the request, counts its prompt and
   prices one HTTP call's upper bound (scheduled as the run schedules its index-bound
   activities: on the host whose index is warm, :mod:`workflows.blocks.affinity`; the
   request may carry a map excerpt);
2. per attempt: stop requested → stop; ``ledger.reserve`` that bound
   (refused past the limit → ``refused``: the caller parks or stops with
   ``budget_exhausted``); ``model.request`` runs once with the run's remaining
   budget as its allowance (it checks the bound before every HTTP call, so no
   attempt can cross the limit); a stop cancels it in flight; whatever the
   outcome — answer, failure, cancellation, lost worker — the attempt's
   consumption is reconciled into the ledger (failure usage charged; a lost
   attempt at its in-flight upper bound); it always goes to the shared queue
   (any worker that serves the model: losing a host never re-pays a call);
3. a transient failure waits (the provider's Retry-After, else exponential
   backoff) — a stop ends the wait — and tries again while attempts remain.

So ``ledger.spent ≤ ledger.max`` always, and ``spent`` is the sum of what every
attempt consumed. The attempts are the workflow's (``model.request`` has a
one-attempt retry policy) precisely so the budget and the stop flag are
checked between attempts.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Literal

from pydantic import ValidationError
from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, TimeoutError
from temporalio.workflow import ActivityCancellationType

with workflow.unsafe.imports_passed_through():
    from durable_navigator.navcore.run.artifacts import ArtifactRef
    from durable_navigator.navcore.run.budget import BudgetLedger, format_usd
    from durable_navigator.navcore.run.decision import TokenUsage
    from durable_navigator.navtypes.errors import BudgetError
    from durable_navigator.navcore.navigator.model_calls import (
        AttemptUsage,
        ModelCallInput,
        ModelCallOutput,
        ModelResult,
        PreparedCall,
        PrepareInput,
        PromptSpec,
    )
    from durable_navigator.navcore.navigator.requests import ModelCallConfig
    from durable_navigator.navcore.model.preflight import REDISPATCH_DELAY, SERVE_ELSEWHERE_WINDOW
    from durable_navigator.workflows.blocks.options import PREPARE, Scheduler, not_served_here, run_activity

__all__ = ["ModelCaller", "CallOutcome", "CANCELLED_TYPE", "one_line"]

CANCELLED_TYPE = "ModelCallCancelled"
#: the longest a stop waits for the cancelled attempt to report what it consumed
_CANCEL_GRACE = timedelta(seconds=10)

Outcome = Literal["ok", "refused", "failed", "stopped"]


def one_line(exc: BaseException) -> str:
    """An error (its cause when it wraps one) as one short line."""
    cause = getattr(exc, "cause", None) or exc
    return " ".join(str(cause).split())[:500] or type(cause).__name__


@dataclass
class CallOutcome:
    """What a model call returned and what all its attempts cost (already booked)."""

    status: Outcome
    result: ModelResult | None = None
    cost_micros: int = 0
    usage: TokenUsage = field(default_factory=TokenUsage)
    calls: int = 0
    attempts: int = 0
    error: str | None = None
    estimate_micros: int = 0
    #: the prepared request (a conversation the next call may continue, e.g. a ReAct turn)
    request_ref: ArtifactRef | None = None

    def add(self, spent: AttemptUsage) -> None:
        """Count one attempt's consumption."""
        self.cost_micros += spent.booked_micros()
        self.usage = self.usage + spent.usage
        self.calls += spent.calls
        self.attempts += max(spent.attempts, 1)


class ModelCaller:
    """Runs model calls against one budget ledger (one call in flight at a time)."""

    def __init__(
        self,
        ledger: Callable[[], BudgetLedger],
        config: ModelCallConfig,
        *,
        stopped: Callable[[], bool],
        count_activity: Callable[[], None] = lambda: None,
        on_attempt: Callable[[int], None] = lambda attempt: None,
        schedule_prepare: Scheduler = run_activity,
    ) -> None:
        """``on_attempt(n)`` runs right before attempt ``n`` is scheduled (e.g. to show "thinking");
        ``schedule_prepare``: how ``model.prepare`` is run (a run passes its ``_on_host``: the request's map
        excerpt reads the warm host's index)."""
        self._ledger = ledger
        self._schedule_prepare = schedule_prepare
        self.config = config
        self._stopped = stopped
        self._count = count_activity
        self._on_attempt = on_attempt
        self._busy = False

    async def call(self, model: str, spec: PromptSpec, *, step: int, label: str) -> CallOutcome:
        """Prepare and run one model call; never raises for model or budget trouble."""
        if self._busy:
            # the allowance of an attempt is the whole remaining budget: calls must not overlap
            raise RuntimeError("one model call at a time per ledger")
        self._busy = True
        try:
            return await self._call(model, spec, step, label)
        finally:
            self._busy = False

    async def _call(self, model: str, spec: PromptSpec, step: int, label: str) -> CallOutcome:
        out = CallOutcome(status="failed")
        if self._stopped():
            out.status = "stopped"
            return out
        self._count()
        try:
            prepared: PreparedCall = await self._schedule_prepare(
                "model.prepare", PrepareInput(model=model, spec=spec), PreparedCall, PREPARE, f"{label} · prepare")
        except ActivityError as err:
            out.error = one_line(err)
            return out
        out.estimate_micros, out.request_ref = prepared.estimate_micros, prepared.request_ref
        cfg = self.config
        for attempt in range(1, cfg.max_attempts + 1):
            if self._stopped():
                out.status = "stopped"
                return out
            ledger = self._ledger()
            try:
                reservation = ledger.reserve(model, prepared.estimate_micros, step)
            except BudgetError as exc:
                out.status, out.error = "refused", str(exc)
                return out
            allowance = ledger.remaining_micros + reservation.micros
            self._count()
            self._on_attempt(attempt)
            spent, result, failure = await self._attempt(model, spec.kind, prepared, attempt, allowance, label)
            ledger.reconcile(reservation, spent.usage, spent.booked_micros(), spent.calls, max(spent.attempts, 1))
            out.add(spent)
            if result is not None:
                out.status, out.result, out.error = "ok", result, None
                return out
            if failure is None:  # cancelled, and the worker never reported back
                out.status = "stopped"
                return out
            status, retry_after = _classify(failure, self._stopped())
            out.error = one_line(failure)
            if status != "retry":
                out.status = status
                return out
            if attempt == cfg.max_attempts:
                break
            delay = retry_after if retry_after is not None else cfg.retry_delay_s(attempt)
            try:
                await workflow.wait_condition(self._stopped, timeout=timedelta(seconds=delay),
                                              timeout_summary=f"{label}: retry {attempt + 1} after {delay:g} s")
            except asyncio.TimeoutError:
                pass
        out.status = "failed"
        return out

    async def _attempt(
        self, model: str, kind: str, prepared: PreparedCall, attempt: int, allowance: int, label: str
    ) -> tuple[AttemptUsage, ModelResult | None, ActivityError | None]:
        """One ``model.request``: its consumption, and its result or its failure.

        A worker that cannot serve the model refuses before any call (nothing spent): the request is
        scheduled again, for another worker, for up to ``SERVE_ELSEWHERE_WINDOW`` (``navcore.model.preflight``).
        """
        deadline = workflow.now() + SERVE_ELSEWHERE_WINDOW
        while True:
            spent, result, failure = await self._request(model, kind, prepared, attempt, allowance, label)
            if failure is None or not not_served_here(failure) or workflow.now() >= deadline or self._stopped():
                return spent, result, failure
            await workflow.sleep(REDISPATCH_DELAY, summary=f"{label}: for a worker that serves {model}"[:200])

    async def _request(
        self, model: str, kind: str, prepared: PreparedCall, attempt: int, allowance: int, label: str
    ) -> tuple[AttemptUsage, ModelResult | None, ActivityError | None]:
        cfg = self.config
        inp = ModelCallInput(
            model=model, kind=kind, request_ref=prepared.request_ref, attempt=attempt, allowance_micros=allowance,
            call_estimate_micros=prepared.estimate_micros, prompt_tokens=prepared.prompt_tokens,
            max_reasks=cfg.max_reasks, stream=cfg.stream,
        )
        more = f" · attempt {attempt}" if attempt > 1 else ""
        handle = workflow.start_activity(
            "model.request",
            inp,
            result_type=ModelCallOutput,
            start_to_close_timeout=timedelta(seconds=cfg.start_to_close_s),
            heartbeat_timeout=timedelta(seconds=cfg.heartbeat_s),
            retry_policy=RetryPolicy(maximum_attempts=1),
            cancellation_type=ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
            summary=f"{label} · {model} · ≤{format_usd(prepared.estimate_micros)}{more}"[:200],
        )
        await workflow.wait_condition(lambda: handle.done() or self._stopped())
        if not handle.done():
            handle.cancel()
            try:
                # the attempt reports what it consumed as it ends (type ModelCallCancelled)
                await workflow.wait_condition(handle.done, timeout=_CANCEL_GRACE)
            except asyncio.TimeoutError:
                # the worker does not answer: book the call's upper bound and leave it behind
                return AttemptUsage(in_flight_micros=prepared.estimate_micros), None, None
        try:
            output: ModelCallOutput = await handle
        except ActivityError as err:
            return _spent_from_failure(err, prepared.estimate_micros), None, err
        return output.spent, output.result, None


def _classify(err: ActivityError, stopped: bool) -> tuple[Outcome | Literal["retry"], float | None]:
    """What a failed attempt means: stopped, refused, failed for good, or worth another attempt."""
    cause = err.cause
    if stopped:
        return "stopped", None
    if isinstance(cause, ApplicationError) and cause.type == CANCELLED_TYPE:
        # cancelled without a stop (its worker shut down, or a cancellation nobody here asked for):
        # the usage is booked; the next attempt goes to a live worker
        return "retry", None
    if isinstance(cause, ApplicationError):
        if cause.type == BudgetError.kind:
            return "refused", None
        if not_served_here(err):
            return "failed", None  # no worker took it over within the window (see _attempt)
        if cause.non_retryable:
            return "failed", None
        delay = cause.next_retry_delay.total_seconds() if cause.next_retry_delay else None
        return "retry", delay
    # a timeout (lost worker, silent stream past the heartbeat timeout) or a cancelled activity
    return "retry", None


def _spent_from_failure(err: ActivityError, in_flight_bound: int) -> AttemptUsage:
    """What a failed attempt consumed: its failure details, else its last heartbeat, else the bound."""
    cause = err.cause
    details: tuple = ()
    if isinstance(cause, ApplicationError):
        details = tuple(cause.details or ())
    elif isinstance(cause, TimeoutError):
        details = tuple(cause.last_heartbeat_details or ())
    for item in details:
        try:
            return AttemptUsage.model_validate(item)
        except ValidationError:
            continue
    # nothing reported: the attempt may have been mid-call, so it is booked at the bound
    return AttemptUsage(in_flight_micros=in_flight_bound)
