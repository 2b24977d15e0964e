"""Follow a run from the terminal: live progress, and the interactive turn loop.

Progress comes from polling the ``get_status`` query (the workflow's
``TurnReport``). In interactive mode, each turn waiting for a verdict is shown
with its proposed flight-plan diff, and the user answers approve / reject
(with feedback) / edit / stop; a run parked on its budget asks raise /
finalize / abort. Verdicts carry the turn number, so answering twice (here
and from another terminal) is harmless: the workflow ignores stale ones.
"""

from __future__ import annotations

import asyncio
import os
import sys
from datetime import timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

import yaml
from pydantic import ValidationError
from rich.live import Live

from durable_navigator.cli.common import cancel_and_wait
from durable_navigator.cli.connect import TemporalSession
from durable_navigator.cli.display import progress_line, turn_panel
from durable_navigator.cli.errors import CliError, TemporalUnreachableError, stderr
from durable_navigator.cli.handles import query_run, signal_run, update_run
from durable_navigator.cli.signals import default_sender
from durable_navigator.navtypes.flightplan import FlightPlan, FlightPlanUpdate
from durable_navigator.navcore.messages import (
    QUERY_STATUS,
    SIGNAL_APPROVE,
    SIGNAL_RAISE_BUDGET,
    SIGNAL_REJECT,
    SIGNAL_STOP,
    UPDATE_EDIT_FLIGHT_PLAN,
    ApproveInput,
    EditFlightPlanInput,
    RaiseBudgetInput,
    RejectInput,
    StopInput,
)
from durable_navigator.navcore.report import TurnReport

__all__ = ["follow_run", "POLL_INTERVAL_S", "VERDICT_PROMPT", "BUDGET_PROMPT"]

POLL_INTERVAL_S = 0.5
#: a progress poll that no worker answers within this long triggers the "waiting for a worker" note
FOLLOW_QUERY_TIMEOUT = timedelta(seconds=5)
#: queries fail while the first workflow task is still pending; tolerate that long
MAX_QUERY_FAILURES = 40
VERDICT_PROMPT = "[a]pprove  [r]eject  [e]dit  [s]top > "
BUDGET_PROMPT = "budget exhausted: [r]aise  [f]inalize  [a]bort > "
EDIT_HELP = (
    "Flight-plan update as one line of YAML, e.g. "
    "{set_rules: [{glob: 'src/**', level: 4}], add_focus_paths: [{glob: src/budget}]}"
)


class _LineReader:
    """Lines from stdin on the event loop itself (``add_reader``), no thread.

    A thread blocked in ``input()`` would keep ``asyncio.run`` (and interpreter
    shutdown) waiting after Ctrl-C; a reader callback is simply removed.
    Non-selectable stdin (a regular file) never blocks, so it is read directly.
    """

    def __init__(self) -> None:
        self.pending = bytearray()

    async def readline(self) -> str:
        loop = asyncio.get_running_loop()
        fd = sys.stdin.fileno()
        while b"\n" not in self.pending:
            ready: asyncio.Future[None] = loop.create_future()
            try:
                loop.add_reader(fd, lambda fut=ready: fut.done() or fut.set_result(None))
            except (PermissionError, OSError, NotImplementedError):
                chunk = os.read(fd, 4096)  # a regular file: ready by definition
            else:
                try:
                    await ready
                finally:
                    loop.remove_reader(fd)
                chunk = os.read(fd, 4096)
            if not chunk:
                raise EOFError
            self.pending += chunk
        line, _, rest = bytes(self.pending).partition(b"\n")
        self.pending = bytearray(rest)
        return line.decode("utf-8", "replace")


async def _ask(reader: _LineReader, prompt: str) -> str:
    """Print ``prompt`` and read one line without blocking the event loop."""
    stderr.print(prompt, end="", markup=False)
    stderr.file.flush()
    try:
        return (await reader.readline()).strip()
    except EOFError:
        raise CliError(
            "stdin closed while the run waits for a verdict; answer from another terminal with "
            "`navigator approve|reject|stop ID`"
        ) from None


async def _wait_closed(handle: Any) -> None:
    try:
        await handle.result()
    except Exception:  # noqa: BLE001 - the caller reads (and reports) the result itself
        return


def plan_stage_lines(markdown: str) -> tuple[str, ...]:
    """The heading and stage lines of a stage-plan markdown, without the "current" marker."""
    lines = [ln.replace(" ← current", "") for ln in markdown.splitlines()]
    return tuple(ln.replace("### ", "") for ln in lines if ln.startswith("### ") or ln[:1].isdigit())


class _Follower:
    """State of one follow loop (what was answered, the live display)."""

    def __init__(self, session: TemporalSession, handle: Any, interactive: bool) -> None:
        self.session = session
        self.handle = handle
        self.interactive = interactive
        self.answered: set[tuple[str, int]] = set()  # (kind, turn) already answered
        self.budget_asked_at: int | None = None
        self.live = Live(console=stderr, auto_refresh=False, transient=True) if stderr.is_terminal else None
        self.last_step: int | None = None
        self.reader = _LineReader()
        self.plan_key: tuple[str, ...] = ()

    def show(self, report: TurnReport) -> None:
        self.show_plan(report)
        if self.live is not None:
            if not self.live.is_started:
                self.live.start()
            self.live.update(progress_line(report), refresh=True)
        elif report.step != self.last_step:
            stderr.print(progress_line(report))
        self.last_step = report.step

    def show_plan(self, report: TurnReport) -> None:
        """Print the stage plan when it appears or its stages change (not on every criteria tick)."""
        if not report.stage_plan:
            return
        key = plan_stage_lines(report.stage_plan)
        if key == self.plan_key:
            return
        self.plan_key = key
        self.pause()
        if report.planning_fallback:
            stderr.print(f"planning fallback: {report.planning_fallback}", markup=False)
        stderr.print("\n".join(key), markup=False, soft_wrap=True)

    def pause(self) -> None:
        if self.live is not None and self.live.is_started:
            self.live.stop()

    async def signal(self, name: str, payload: Any) -> None:
        await signal_run(self.session.client, self.handle.id, name, payload)

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
        stderr.print(turn_panel(report, title=f"{what} · awaiting your verdict"))
        sender = default_sender()
        while True:
            answer = (await _ask(self.reader, VERDICT_PROMPT)).lower()[:1]
            if answer == "a":
                await self.signal(SIGNAL_APPROVE, ApproveInput(turn=turn, kind=kind, sender=sender))
            elif answer == "r":
                feedback = await _ask(self.reader, "feedback for the model > ")
                await self.signal(SIGNAL_REJECT, RejectInput(turn=turn, kind=kind, feedback=feedback[:4000],
                                                             sender=sender))
            elif answer == "s":
                reason = await _ask(self.reader, "reason (enter for 'stopped by user') > ") or "stopped by user"
                await self.signal(SIGNAL_STOP, StopInput(reason=reason[:500], turn=turn, sender=sender))
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
            self.answered.add((kind, turn))
            stderr.print(f"sent {dict(a='approve', r='reject', s='stop')[answer]} for {what}")
            return

    async def edit(self, turn: int, sender: str) -> None:
        stderr.print(EDIT_HELP, markup=False)
        text = await _ask(self.reader, "update > ")
        try:
            update = FlightPlanUpdate.model_validate(yaml.safe_load(text) or {})
        except (yaml.YAMLError, ValidationError) as exc:
            stderr.print(f"not a valid flight-plan update: {str(exc).splitlines()[0]}", markup=False)
            return
        try:
            await update_run(
                self.session.client, self.handle.id, UPDATE_EDIT_FLIGHT_PLAN,
                EditFlightPlanInput(turn=turn, update=update, sender=sender), FlightPlan,
            )  # fmt: skip
        except CliError as exc:
            stderr.print(str(exc), markup=False)
            return
        report = await query_run(self.handle, QUERY_STATUS, TurnReport)
        stderr.print(turn_panel(report, title=f"turn {turn} · edited plan"))

    async def budget(self, report: TurnReport) -> None:
        self.pause()
        stderr.print(progress_line(report))
        sender = default_sender()
        while True:
            answer = (await _ask(self.reader, BUDGET_PROMPT)).lower()[:1]
            if answer == "r":
                amount = await _ask(self.reader, "add how many USD? > ")
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
            self.budget_asked_at = report.decisions
            return


async def follow_run(
    session: TemporalSession, handle: Any, *, interactive: bool, closed: asyncio.Future[Any] | None = None
) -> None:
    """Show progress until the run closes; in interactive mode, ask for verdicts.

    ``closed`` is the caller's ``handle.result()`` task, watched here and left to the
    caller (who reads the result from it, so the history is long-polled once); without
    it, an own waiter is made and drained before returning.
    """
    follower = _Follower(session, handle, interactive)
    own = closed is None
    if closed is None:
        closed = asyncio.ensure_future(_wait_closed(handle))
    failures = 0
    warned_no_worker = False
    report_seen = False
    try:
        while not closed.done():
            try:
                report = await query_run(handle, QUERY_STATUS, TurnReport, FOLLOW_QUERY_TIMEOUT)
                failures = 0
            except TemporalUnreachableError as exc:
                # no worker answers (yet): the run is durable and waits for one, so do we
                if not warned_no_worker and not closed.done():
                    follower.pause()
                    stderr.print(f"waiting for a worker on task queue {session.task_queue!r}: {exc}", markup=False)
                    warned_no_worker = True
                await asyncio.wait({closed}, timeout=POLL_INTERVAL_S)
                continue
            except CliError as exc:
                failures += 1
                if closed.done():
                    break
                if not warned_no_worker and report_seen is False:
                    # before any answer, a failed poll (a deadline mapped to another code under
                    # load) means the same: no worker has picked the run up yet
                    follower.pause()
                    stderr.print(f"waiting for a worker on task queue {session.task_queue!r}: {exc}", markup=False)
                    warned_no_worker = True
                if failures >= MAX_QUERY_FAILURES:
                    raise
                await asyncio.wait({closed}, timeout=POLL_INTERVAL_S)
                continue
            report_seen = True
            follower.show(report)
            if (interactive and report.awaiting_turn is not None
                    and (report.awaiting_kind or "turn", report.awaiting_turn) not in follower.answered):
                await follower.verdict(report)
            elif interactive and report.status == "awaiting_budget" and follower.budget_asked_at != report.decisions:
                await follower.budget(report)
            await asyncio.wait({closed}, timeout=POLL_INTERVAL_S)
    finally:
        follower.pause()
        if own:
            await cancel_and_wait(closed)
