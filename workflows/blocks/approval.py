"""Waits for a human: a verdict on a proposed turn or plan, or a budget raise.

The budget park (:meth:`ApprovalGate.out_of_budget`) is the one policy of every workflow whose
model call or subagent the ledger refused: autonomous runs end (``budget_exhausted``), interactive
runs park in ``awaiting_budget`` until ``raise_budget`` raises the limit, a stop or a switch to
autonomous releases them, or the approval timeout passes.

The verdict itself arrives by signal (``approve`` / ``reject`` / ``stop``) and is
recorded on :class:`~navcore.navigator.state.Steering` by ``navcore.navigator.turns.record_verdict``;
this block only parks the run, publishes the waiting status and applies the
approval timeout (the configured default verdict, noted as ``approval-timeout``).
Switching to autonomous mode or a stop request ends any wait.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from durable_navigator.navcore.run.budget import BudgetLedger
    from durable_navigator.navcore.navigator.requests import ApprovalConfig
    from durable_navigator.navcore.navigator.state import (
        ExecutionMode,
        PendingTurn,
        RunStatus,
        Status,
        Steering,
        Verdict,
    )

__all__ = ["ApprovalGate"]


class ApprovalGate:
    """Parks a run until a human answers (or the approval timeout passes)."""

    def __init__(self, steering: Callable[[], Steering], run: Callable[[], RunStatus], config: ApprovalConfig,
                 publish: Callable[[], None]) -> None:
        self._steering, self._run = steering, run
        self.config = config
        self._publish = publish

    def _released(self) -> bool:
        s = self._steering()
        return s.stop_requested is not None or s.mode is ExecutionMode.AUTONOMOUS

    async def verdict(self, pending: PendingTurn, what: str) -> tuple[Verdict, bool]:
        """Wait for a verdict on ``pending``; returns it and whether the timeout chose it.

        Without an explicit verdict, a stop request means ``stop`` and a switch
        to autonomous mode means ``approve``.
        """
        steering, run = self._steering(), self._run()
        steering.pending, run.status = pending, Status.AWAITING_APPROVAL
        self._publish()
        timed_out = False
        try:
            await workflow.wait_condition(lambda: pending.verdict is not None or self._released(),
                                          timeout=timedelta(seconds=self.config.timeout_s),
                                          timeout_summary=f"approval of {what}")
        except asyncio.TimeoutError:
            timed_out = True
            pending.verdict, pending.verdict_sender = self.config.default_verdict, "approval-timeout"
        steering.pending = None
        verdict: Verdict = pending.verdict or ("stop" if steering.stop_requested is not None else "approve")
        return verdict, timed_out

    async def budget_raised(self, ledger: Callable[[], BudgetLedger]) -> str:
        """Park on an exhausted budget: ``raised``, ``released`` (stop / autonomous) or ``timeout``."""
        run = self._run()
        run.status = Status.AWAITING_BUDGET
        self._publish()
        limit = ledger().max_micros
        try:
            await workflow.wait_condition(lambda: ledger().max_micros > limit or self._released(),
                                          timeout=timedelta(seconds=self.config.timeout_s),
                                          timeout_summary="budget decision")
        except asyncio.TimeoutError:
            return "timeout"
        return "raised" if ledger().max_micros > limit else "released"

    async def out_of_budget(self, ledger: Callable[[], BudgetLedger], message: str) -> str | None:
        """The ledger refused a call: ``None`` when the (interactive) run got a raise and goes on, else the
        stop detail of its ``budget_exhausted`` end (autonomous at once; interactive after a stop, a switch
        to autonomous or the timeout)."""
        if self._steering().mode is not ExecutionMode.INTERACTIVE:
            return message
        answer = await self.budget_raised(ledger)
        if answer == "raised":
            return None
        return f"{message}; nobody raised the budget in time" if answer == "timeout" else message
