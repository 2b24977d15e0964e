"""The questions a followed run asks in interactive mode: its verdicts and its budget.

A turn waiting for a verdict is answered approve / reject (with feedback) / edit / stop (an
investigation's stage plan is edited as a YAML file); a run parked on its budget asks raise /
finalize / abort. Verdicts carry the turn number and go through the ``submit_verdict`` update:
when another terminal answered first, the run refuses this one and the terminal says so; while a
prompt waits, the run's status is polled so an answer given elsewhere ends the question at once.
:class:`RunPrompts` is the base of ``cli.follow``'s follower, which adds the live display.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Callable
from datetime import timedelta
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from durable_navigator.cli.common import cancel_and_wait
from durable_navigator.cli.connect import TemporalSession
from durable_navigator.cli.display import print_block, progress_line, turn_panel
from durable_navigator.cli.errors import CliError, TemporalUnreachableError, stderr
from durable_navigator.cli.handles import query_run, signal_run, update_run, with_full_reasoning
from durable_navigator.cli.planfile import PLAN_FILE_HELP, dump_stage_plan, load_stage_plan, send_plan_edit
from durable_navigator.cli.prompt import LineReader, Superseded, ask
from durable_navigator.cli.signals import default_sender, send_verdict
from durable_navigator.navcore.investigation.investigation import InvestigationState
from durable_navigator.navcore.navigator.messages import (
    QUERY_STATUS,
    SIGNAL_RAISE_BUDGET,
    SIGNAL_STOP,
    UPDATE_EDIT_FLIGHT_PLAN,
    EditFlightPlanInput,
    RaiseBudgetInput,
    StopInput,
    VerdictInput,
)
from durable_navigator.navcore.navigator.report import TurnReport
from durable_navigator.navtypes.errors import validation_lines
from durable_navigator.navtypes.flightplan import FlightPlan, FlightPlanUpdate

__all__ = ["RunPrompts", "update_problems", "POLL_INTERVAL_S", "FOLLOW_QUERY_TIMEOUT", "VERDICT_PROMPT",
           "BUDGET_PROMPT"]

#: the investigation's whole state (its stage plan, to edit)
QUERY_INVESTIGATION = "get_investigation"
POLL_INTERVAL_S = 0.5
#: a progress poll that no worker answers within this long triggers the "waiting for a worker" note
FOLLOW_QUERY_TIMEOUT = timedelta(seconds=5)
VERDICT_PROMPT = "[a]pprove  [r]eject  [e]dit  [s]top > "
BUDGET_PROMPT = "budget exhausted: [r]aise  [f]inalize  [a]bort > "
EDIT_HELP = (
    "Flight-plan update as one line of YAML, e.g. "
    "{set_rules: [{glob: 'src/**', level: 4}], add_focus_paths: [{glob: src/budget}]}"
)


def update_problems(exc: Exception) -> str:
    """A flight-plan update's problems, each naming its field: ``set_rules.0.level: …``."""
    if isinstance(exc, ValidationError):
        return "; ".join(validation_lines(exc))
    mark = getattr(exc, "problem_mark", None)
    where = f" (column {mark.column + 1})" if mark is not None else ""
    return f"not valid YAML{where}: {getattr(exc, 'problem', None) or str(exc).splitlines()[0]}"


class RunPrompts:
    """The open question of one followed run, and the answers already given (by kind and turn)."""

    def __init__(self, session: TemporalSession, handle: Any, closed: asyncio.Future[Any]) -> None:
        self.session = session
        self.handle = handle
        self.closed = closed
        #: completes (with why) when the question now asked is no longer open: see :meth:`asking`
        self.question: asyncio.Future[str] | None = None
        self.answered: set[tuple[str, int]] = set()  # (kind, turn) already answered
        self.budget_asked_at: int | None = None
        self.reader = LineReader()

    def pause(self) -> None:
        """Take down whatever live display would draw over a prompt (the follower's progress line)."""

    async def signal(self, name: str, payload: Any) -> None:
        await signal_run(self.session.client, self.handle.id, name, payload)

    async def submit(self, verdict: VerdictInput) -> bool:
        """Send a verdict; False (and why) when the run refused it, e.g. another terminal answered first."""
        try:
            outcome = await send_verdict(self.session.client, self.handle.id, verdict)
        except CliError as exc:
            if isinstance(exc, TemporalUnreachableError):
                raise
            stderr.print(str(exc), markup=False)
            return False
        return outcome.applied

    async def ask(self, prompt: str) -> str:
        """One answer to ``prompt``; :class:`Superseded` when the open question was answered elsewhere."""
        return await ask(self.reader, prompt, self.question)

    async def _watch(self, still_open: Callable[[TurnReport], bool], gone: str) -> str:
        """Poll the run's status while a prompt waits; ``gone`` once ``still_open`` is false.

        Another terminal's verdict is seen within a poll interval (it used to be seen only when
        the user typed here, and was then refused as answered). The run ending counts too.
        """
        while True:
            await asyncio.wait({self.closed}, timeout=POLL_INTERVAL_S)
            if self.closed.done():
                return f"{gone}: the run has ended"
            try:
                report = await query_run(self.handle, QUERY_STATUS, TurnReport, FOLLOW_QUERY_TIMEOUT)
            except CliError:
                continue  # a missed poll only delays the notice; the follow loop reports real trouble
            if not still_open(report):
                return gone

    async def asking(self, still_open: Callable[[TurnReport], bool], gone: str, questions: Any) -> bool:
        """Run ``questions`` (the prompts of one open question) while watching that it stays open.

        False when it was answered elsewhere: the user is told, on its own line, and no panel or
        progress line drawn afterwards erases it (they are drawn below it).
        """
        self.question = asyncio.ensure_future(self._watch(still_open, gone))
        try:
            await questions
        except Superseded as exc:
            stderr.print(str(exc), markup=False)
            return False
        finally:
            question, self.question = self.question, None
            await cancel_and_wait(question)
        return True

    async def verdict(self, report: TurnReport) -> None:
        turn, kind = report.awaiting_turn, report.awaiting_kind or "turn"
        assert turn is not None
        self.pause()
        if report.workflow == "investigation":
            what = "the investigation plan"
        elif report.workflow == "research":
            what = f"research plan (round {turn})" if kind == "plan" else f"the findings of step {turn}"
        else:
            what = "stage plan" if kind == "plan" else f"turn {turn}"
        print_block(stderr, turn_panel(with_full_reasoning(report, self.session.artifact_store()), title=f"{what} · awaiting your verdict"))
        await self.asking(lambda now: (now.awaiting_kind or "turn", now.awaiting_turn) == (kind, turn),
                          f"{what} was answered elsewhere (another terminal, or `navigator approve|reject|stop`)",
                          self._verdict(report, what))
        self.answered.add((kind, turn))

    async def _verdict(self, report: TurnReport, what: str) -> None:
        turn, kind = report.awaiting_turn, report.awaiting_kind or "turn"
        assert turn is not None
        sender = default_sender()
        while True:
            answer = (await self.ask(VERDICT_PROMPT)).lower()[:1]
            if answer == "a":
                applied = await self.submit(VerdictInput(verdict="approve", turn=turn, kind=kind, sender=sender))
            elif answer == "r":
                feedback = await self.ask("feedback for the model > ")
                applied = await self.submit(VerdictInput(verdict="reject", turn=turn, kind=kind,
                                                         feedback=feedback[:4000], sender=sender))
            elif answer == "s":
                reason = await self.ask("reason (enter for 'stopped by user') > ") or "stopped by user"
                await self.signal(SIGNAL_STOP, StopInput(reason=reason[:500], turn=turn, sender=sender))
                applied = True
            elif answer == "e" and kind == "plan" and report.workflow == "investigation":
                await self.edit_stages(turn, sender)
                continue
            elif answer == "e" and (kind == "plan" or report.workflow == "research"):
                what_edit = "a research plan or step" if report.workflow == "research" else "the stage plan"
                stderr.print(f"{what_edit} cannot be edited: approve it, or reject it with feedback")
                continue
            elif answer == "e":
                await self.edit(turn, sender)
                continue
            else:
                stderr.print("please answer a, r, e or s")
                continue
            if applied:
                stderr.print(f"sent {dict(a='approve', r='reject', s='stop')[answer]} for {what}")
            return

    async def edit(self, turn: int, sender: str) -> None:
        stderr.print(EDIT_HELP, markup=False)
        text = await self.ask("update > ")
        try:
            update = FlightPlanUpdate.model_validate(yaml.safe_load(text) or {})
        except (yaml.YAMLError, ValidationError) as exc:
            stderr.print(f"not a valid flight-plan update: {update_problems(exc)}", markup=False)
            return
        try:
            await update_run(
                self.session.client, self.handle.id, UPDATE_EDIT_FLIGHT_PLAN,
                EditFlightPlanInput(turn=turn, update=update, sender=sender), FlightPlan, what="the edit",
            )  # fmt: skip
        except CliError as exc:
            stderr.print(str(exc), markup=False)
            return
        report = await query_run(self.handle, QUERY_STATUS, TurnReport)
        print_block(stderr, turn_panel(report, title=f"turn {turn} · edited plan"))

    async def edit_stages(self, turn: int, sender: str) -> None:
        """Edit an investigation's stage plan: the plan is written to a YAML file the user edits in any
        editor; Enter sends it (or the path of another file); the run's answer is shown, then the prompt again."""
        state = await query_run(self.handle, QUERY_INVESTIGATION, InvestigationState)
        path = Path(tempfile.mkdtemp(prefix="navigator-plan-")) / f"{self.handle.id}-round{turn}.yaml"
        path.write_text(dump_stage_plan(state.stages), encoding="utf-8")
        stderr.print(f"the plan is in {path}: edit it ({PLAN_FILE_HELP})", markup=False, soft_wrap=True)
        answer = await self.ask("Enter sends it (or type another file's path; c cancels) > ")
        if answer.lower() == "c":
            return
        try:
            stages = load_stage_plan(Path(answer).expanduser() if answer else path)
            edited = await send_plan_edit(self.session.client, self.handle.id, turn, stages, sender)
        except CliError as exc:
            if isinstance(exc, TemporalUnreachableError):
                raise
            stderr.print(str(exc), markup=False)  # one line naming the field; the plan still waits
            return
        stderr.print(edited.detail, markup=False)
        report = await query_run(self.handle, QUERY_STATUS, TurnReport)
        print_block(stderr, turn_panel(report, title=f"the investigation plan (round {turn}) · edited"))

    async def budget(self, report: TurnReport) -> None:
        self.pause()
        stderr.print(progress_line(report))
        await self.asking(lambda now: now.status == "awaiting_budget",
                          "the budget was raised, or the run finalized, elsewhere", self._budget())
        self.budget_asked_at = report.decisions

    async def _budget(self) -> None:
        sender = default_sender()
        while True:
            answer = (await self.ask(BUDGET_PROMPT)).lower()[:1]
            if answer == "r":
                amount = await self.ask("add how many USD? > ")
                try:
                    payload = RaiseBudgetInput(add_usd=Decimal(amount), sender=sender)
                except (InvalidOperation, ValidationError):
                    stderr.print("enter a positive number of dollars, e.g. 0.25")
                    continue
                await self.signal(SIGNAL_RAISE_BUDGET, payload)
            elif answer == "f":
                await self.signal(SIGNAL_STOP, StopInput(reason="finalize on budget exhaustion", sender=sender))
            elif answer == "a":
                await self.handle.cancel()
            else:
                stderr.print("please answer r, f or a")
                continue
            return
