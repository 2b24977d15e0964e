"""The message handlers and bookkeeping every steerable run shares, written once (issue 30).

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
:meth:`StoppableRun._turn_report`. The layers, so that a run answers only the messages it honours:

* :class:`StoppableRun` — ``stop`` and the status queries, plus the bookkeeping every run
  repeats (activity count, stop flag, the Web UI publish, the repository scan, the
  continue-as-new check and hand-over);
* :class:`SteerableRun` — adds verdicts, mode, budget raises and the decision log;
* :class:`ChildEvents` — the ``child_event`` signal of runs that start subagents or
  stage workers; :class:`WithChildren` is a steerable run with it. ``navigator explore
  --branches`` is ``ChildEvents`` + ``StoppableRun``: it never waits for a verdict and
  its children hold their own budgets, so approve / reject / set_mode / raise_budget
  would be accepted and do nothing.

A payload that decodes to nothing (JSON ``null``) is logged and ignored: raising in a
handler would fail the workflow task on every retry and wedge the run.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any, ClassVar

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from durable_navigator.navcore.navigator.activity_io import ScanInput, ScanOutput
    from durable_navigator.navcore.run.budget import format_usd, usd_to_micros
    from durable_navigator.navcore.navigator.messages import (
        ApproveInput,
        RaiseBudgetInput,
        RejectInput,
        SetModeInput,
        StopInput,
        VerdictInput,
        VerdictOutcome,
    )
    from durable_navigator.navcore.navigator.report import DecisionLogView, TurnReport, shorten
    from durable_navigator.navcore.navigator.state import PendingTurn, Status, StopReason, Verdict
    from durable_navigator.navcore.run.subagents import SIGNAL_CHILD_EVENT, ChildEvent
    from durable_navigator.navcore.navigator.turns import record_verdict, request_stop, verdict_problem
    from durable_navigator.navcore.run.sources import display_root
    from durable_navigator.navtypes.mapmeta import MapMetadata
    from durable_navigator.workflows.blocks.affinity import run_on_host
    from durable_navigator.workflows.blocks.approval import ApprovalGate
    from durable_navigator.workflows.blocks.decision_log import DecisionLogWriter
    from durable_navigator.workflows.blocks.model_call import ModelCaller, one_line
    from durable_navigator.workflows.blocks.options import SCAN, ActivityOptions
    from durable_navigator.workflows.blocks.webui import Publisher

__all__ = ["StoppableRun", "SteerableRun", "ChildEvents", "WithChildren", "invalid_payload"]

#: statuses shown in the Web UI details but never upserted (each upsert is a history event)
_TRANSIENT = frozenset({Status.PREPARING, Status.THINKING, Status.RENDERING})


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


class StoppableRun:
    """``stop`` and the status queries of a run whose ``self.state`` has ``run``, ``steering`` and ``ledger``.

    Also the bookkeeping the runs share: the activity count, the stop flag, the Web UI
    publish (:meth:`_details` is the run's markdown), the scan and continue-as-new.
    """

    state: Any
    req: Any
    _ui: Publisher

    def _turn_report(self) -> TurnReport:
        """The run's current report (what ``get_status`` answers)."""
        raise NotImplementedError

    def _details(self) -> str:
        """The Web UI details markdown of the run's current state."""
        raise NotImplementedError

    def _stop(self, reason: StopReason, detail: str) -> None:
        """Record a stop reason (the run's own: it may also move its phase)."""
        raise NotImplementedError

    def _on_stop(self) -> None:
        """Called for each accepted ``stop`` signal payload, before the stop is recorded."""

    # -- bookkeeping -------------------------------------------------------------------------

    def _count_activity(self) -> None:
        self.state.run.activities_used += 1

    def _stop_requested(self) -> bool:
        return self.state.steering.stop_requested is not None

    def _thinking(self, attempt: int) -> None:
        self.state.run.status = Status.THINKING
        self._publish()

    def _stop_detail(self, pending: PendingTurn | None = None) -> str:
        """``<reason> (by <sender>)`` of a stop (the sender of ``pending``'s verdict when it stopped the run)."""
        st = self.state.steering
        who = st.stop_sender or (pending.verdict_sender if pending else None) or "user"
        return f"{st.stop_requested or 'stopped'} (by {who})"

    def _publish(self) -> None:
        """Search attributes (only when changed) and the Web UI details.

        Transient statuses (thinking, rendering) are not upserted: each upsert
        is a history event, and the Web UI details show them anyway.
        """
        s = self.state
        status = s.run.status if s.run.status not in _TRANSIENT else Status.THINKING
        # the repository as the user named it: a snapshot's origin path, url@commit (NavigatorRepo, `ls --repo`)
        self._ui.publish(display_root(s.repo_root), status.value, s.ledger.spent_micros, s.run.iteration, self._details())

    async def _scan_repo(self, inp: ScanInput) -> ScanOutput:
        """Index the repository (``navigator.scan``); a failure ends the run (``ScanFailed``, not retried)."""
        s = self.state
        s.run.status = Status.SCANNING
        self._count_activity()
        self._publish()
        try:
            return await self._on_host("navigator.scan", inp, ScanOutput, SCAN,
                                       f"scan {shorten(display_root(s.repo_root), 80)} · {s.model}")
        except ActivityError as err:
            s.run.status = Status.FAILED
            self._stop(StopReason.FAILED, one_line(err))
            self._publish()
            raise ApplicationError(f"scan failed: {s.run.stop_detail}", type="ScanFailed", non_retryable=True) from err

    async def _on_host(self, name: str, arg: Any, result_type: type[Any], options: ActivityOptions,
                       summary: str) -> Any:
        """An index-bound activity (scan, render, code tool, model request, evidence check, merge of findings)
        on the host whose index is warm, any host if that one is gone (:mod:`workflows.blocks.affinity`)."""
        return await run_on_host(self.state.run, timedelta(seconds=self.req.host_start_timeout_s), name, arg,
                                 result_type, options, summary)

    def _should_continue_as_new(self) -> bool:
        info = workflow.info()
        return info.is_continue_as_new_suggested() or (
            info.get_current_history_length() >= self.req.continue_as_new_events)

    async def _continue_as_new(self) -> None:
        """Hand the state to a new run of the same request (after every message handler has finished)."""
        await workflow.wait_condition(workflow.all_handlers_finished)
        self.state.run.continued_runs += 1
        workflow.logger.info("continuing as new after step %d", self.state.run.iteration)
        workflow.continue_as_new(self.req.model_copy(update={"carried_state": self.state}))

    # -- messages ----------------------------------------------------------------------------

    @workflow.signal(name="stop")
    def stop(self, inp: StopInput) -> None:
        """Finish now with what the run has (the model call in flight is cancelled)."""
        if invalid_payload("stop", inp):
            return
        self._on_stop()
        request_stop(self.state.steering, inp.reason, inp.sender, inp.turn)

    @workflow.query(name="get_status")
    def get_status(self) -> TurnReport:
        """The current turn report."""
        return self._turn_report()

    @workflow.query(name="status")
    def status_alias(self) -> TurnReport:
        """Alias of ``get_status``."""
        return self.get_status()


class SteerableRun(StoppableRun):
    """The steering handlers of a run whose ``self.state`` also has a decision ``log``."""

    #: what this run's ``kind: plan`` verdicts answer
    PLAN_NAME: ClassVar[str] = "the stage plan"
    #: how a ``kind: turn`` verdict's outcome names the turn it answered
    TURN_NAME: ClassVar[str] = "turn"

    def _children(self) -> list[Any]:
        """The run's child workflows (the decision log lists them); none by default."""
        return []

    def _wire(self, metadata: Callable[[], MapMetadata | None]) -> None:
        """The blocks every steerable run composes, on ``self.state`` and ``self.req`` (set first): the Web UI
        publisher, the decision-log writer (``metadata``: the map's, or None), the priced model caller and the
        approval gate."""
        req = self.req
        self._ui = Publisher()
        self.log = DecisionLogWriter(lambda: self.state.log, metadata, self._publish)
        self.caller = ModelCaller(lambda: self.state.ledger, req.model_call, stopped=self._stop_requested,
                                  count_activity=self._count_activity, on_attempt=self._thinking,
                                  schedule_prepare=self._on_host)
        self.gate = ApprovalGate(lambda: self.state.steering, lambda: self.state.run, req.approval, self._publish)

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

    @workflow.query(name="get_decision_log")
    def get_decision_log(self) -> DecisionLogView:
        """Every logged decision and steering note so far (and the run's children)."""
        return DecisionLogView(entries=self.state.log.entries, notes=self.state.steering.notes,
                               children=list(self._children()))

    @workflow.query(name="decision_log")
    def decision_log_alias(self) -> DecisionLogView:
        """Alias of ``get_decision_log``."""
        return self.get_decision_log()


class ChildEvents:
    """The ``child_event`` signal of a run with subagents or stage workers (``self.subagents``)."""

    subagents: Any
    state: Any
    _publish: Callable[[], None]  # the run's (StoppableRun._publish)

    def _children(self) -> list[Any]:
        return list(self.state.children)

    @workflow.signal(name=SIGNAL_CHILD_EVENT)
    def child_event(self, inp: ChildEvent) -> None:
        """A child's progress (status, iteration, cost) while it runs."""
        if inp is not None and self.subagents is not None and self.subagents.on_event(inp):
            self._publish()


class WithChildren(ChildEvents, SteerableRun):
    """A steerable run with subagents or stage workers that report progress."""
