"""The message handlers every steerable run shares, written once (issue 30).

A steerable run (the navigator, research, an investigation) holds a state with a
``steering`` block, a USD ``ledger`` and a decision ``log``; a human or a script
steers it with the same messages whatever the run does:

* signals ``approve`` / ``reject`` (a verdict on the pending turn or plan), ``stop``,
  ``set_mode``, ``raise_budget``;
* the update ``submit_verdict`` (a verdict answered with its outcome; the validator
  refuses one the run would ignore, so the sender hears it);
* queries ``get_status`` / ``get_decision_log`` and their DESIGN.md names ``status`` /
  ``decision_log`` (thin aliases, the same payloads: kept because clients of both names exist).

The SDK collects handlers a workflow class inherits (``inspect.getmembers``), so a run is
``@workflow.defn class X(SteerableRun)`` with its ``run()``, its state and
:meth:`SteerableRun._turn_report`. :class:`WithChildren` adds the ``child_event`` signal
of runs that start subagents or stage workers.

A payload that decodes to nothing (JSON ``null``) is logged and ignored: raising in a
handler would fail the workflow task on every retry and wedge the run.
"""

from __future__ import annotations

from typing import Any, ClassVar

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from durable_navigator.navcore.budget import format_usd, usd_to_micros
    from durable_navigator.navcore.messages import (
        ApproveInput,
        RaiseBudgetInput,
        RejectInput,
        SetModeInput,
        StopInput,
        VerdictInput,
        VerdictOutcome,
    )
    from durable_navigator.navcore.report import DecisionLogView, TurnReport
    from durable_navigator.navcore.state import Verdict
    from durable_navigator.navcore.subagents import SIGNAL_CHILD_EVENT, ChildEvent
    from durable_navigator.navcore.turns import record_verdict, request_stop, verdict_problem

__all__ = ["SteerableRun", "WithChildren", "invalid_payload"]


def invalid_payload(name: str, inp: object) -> bool:
    """True (and logged) for a payload that decoded to nothing, e.g. JSON ``null``.

    The data converter drops payloads that fail validation before a handler
    runs; ``null`` reaches the handler as ``None``, and raising there would
    fail the workflow task on every retry, wedging the run.
    """
    if inp is None:
        workflow.logger.warning("ignored %s signal with an empty (null) payload", name)
        return True
    return False


class SteerableRun:
    """The steering handlers of a run whose ``self.state`` has ``steering``, ``ledger`` and ``log``."""

    #: what this run's ``kind: plan`` verdicts answer
    PLAN_NAME: ClassVar[str] = "the stage plan"
    #: how a ``kind: turn`` verdict's outcome names the turn it answered
    TURN_NAME: ClassVar[str] = "turn"

    state: Any

    def _turn_report(self) -> TurnReport:
        """The run's current report (what ``get_status`` answers)."""
        raise NotImplementedError

    def _children(self) -> list[Any]:
        """The run's child workflows (the decision log lists them); none by default."""
        return []

    def _on_stop(self) -> None:
        """Called for each accepted ``stop`` signal payload, before the stop is recorded."""

    def _verdict(self, verdict: Verdict, turn: int, sender: str, feedback: str | None, kind: str) -> None:
        if not record_verdict(self.state.steering, verdict, turn, sender, feedback, kind, self.PLAN_NAME):
            workflow.logger.info("ignored %s for %s %d from %s: stale or duplicate", verdict, kind, turn, sender)

    @workflow.signal(name="approve")
    def approve(self, inp: ApproveInput) -> None:
        """Accept the pending turn (``kind: turn``) or plan (``kind: plan``)."""
        if not invalid_payload("approve", inp):
            self._verdict("approve", inp.turn, inp.sender, None, inp.kind)

    @workflow.signal(name="reject")
    def reject(self, inp: RejectInput) -> None:
        """Reject the pending turn or plan; the feedback goes into the next prompt."""
        if not invalid_payload("reject", inp):
            self._verdict("reject", inp.turn, inp.sender, inp.feedback, inp.kind)

    @workflow.update(name="submit_verdict")
    def submit_verdict(self, inp: VerdictInput) -> VerdictOutcome:
        """Approve or reject like the signals, answering with the outcome (what ``navigator approve`` /
        ``reject`` and the interactive follower send; the validator refuses a verdict the run would ignore)."""
        applied = record_verdict(self.state.steering, inp.verdict, inp.turn, inp.sender, inp.feedback,
                                 inp.kind, self.PLAN_NAME)
        what = f"{self.PLAN_NAME} of round {inp.turn}" if inp.kind == "plan" else f"{self.TURN_NAME} {inp.turn}"
        return VerdictOutcome(verdict=inp.verdict, turn=inp.turn, kind=inp.kind, applied=applied,
                              detail=f"{inp.verdict} {'applied to' if applied else 'ignored for'} {what}")

    @submit_verdict.validator
    def _validate_verdict(self, inp: VerdictInput) -> None:
        problem = verdict_problem(self.state.steering, inp.turn, inp.kind, self.PLAN_NAME)
        if problem is not None:
            raise ValueError(problem)

    @workflow.signal(name="stop")
    def stop(self, inp: StopInput) -> None:
        """Finish now with what the run has (the model call in flight is cancelled)."""
        if invalid_payload("stop", inp):
            return
        self._on_stop()
        request_stop(self.state.steering, inp.reason, inp.sender, inp.turn)

    @workflow.signal(name="set_mode")
    def set_mode(self, inp: SetModeInput) -> None:
        """Switch between autonomous and interactive."""
        if invalid_payload("set_mode", inp):
            return
        self.state.steering.mode = inp.mode
        self.state.steering.note("set_mode", inp.sender, None, f"mode → {inp.mode.value}")

    @workflow.signal(name="raise_budget")
    def raise_budget(self, inp: RaiseBudgetInput) -> None:
        """Raise the USD limit (also answers a budget park)."""
        if invalid_payload("raise_budget", inp):
            return
        add = usd_to_micros(inp.add_usd)
        if add <= 0:
            # a signal must never fail the workflow task: ignore and say so
            workflow.logger.warning("ignored raise_budget of %s USD from %s: below one micro-dollar", inp.add_usd,
                                    inp.sender)
            return
        self.state.ledger.raise_limit(add)
        self.state.steering.note("raise_budget", inp.sender, None, f"+{format_usd(add)}")

    @workflow.query(name="get_status")
    def get_status(self) -> TurnReport:
        """The current turn report."""
        return self._turn_report()

    @workflow.query(name="get_decision_log")
    def get_decision_log(self) -> DecisionLogView:
        """Every logged decision and steering note so far (and the run's children)."""
        return DecisionLogView(entries=self.state.log.entries, notes=self.state.steering.notes,
                               children=list(self._children()))

    @workflow.query(name="status")
    def status_alias(self) -> TurnReport:
        """Alias of ``get_status``."""
        return self.get_status()

    @workflow.query(name="decision_log")
    def decision_log_alias(self) -> DecisionLogView:
        """Alias of ``get_decision_log``."""
        return self.get_decision_log()


class WithChildren(SteerableRun):
    """A steerable run with subagents or stage workers (``self.subagents``) that report progress."""

    subagents: Any

    def _publish(self) -> None:
        raise NotImplementedError

    def _children(self) -> list[Any]:
        return list(self.state.children)

    @workflow.signal(name=SIGNAL_CHILD_EVENT)
    def child_event(self, inp: ChildEvent) -> None:
        """A child's progress (status, iteration, cost) while it runs."""
        if inp is not None and self.subagents is not None and self.subagents.on_event(inp):
            self._publish()
