"""Follow a run from the terminal: live progress, and the interactive turn loop.

Progress comes from polling the ``get_status`` query (the workflow's
``TurnReport``). In interactive mode, each turn waiting for a verdict is shown
with its proposed flight-plan diff, and the user answers approve / reject
(with feedback) / edit / stop (an investigation's stage plan is edited as a YAML file); a run
parked on its budget asks raise / finalize / abort. Verdicts carry the turn number and go through the ``submit_verdict`` update:
when another terminal answered first, the run refuses this one and the
terminal says so. While the scan indexes a large repository, a progress bar
shows files per second (the scan activity's heartbeat details).
"""

from __future__ import annotations

import asyncio
import re
import tempfile
from collections.abc import Callable
from datetime import timedelta
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError
from rich.live import Live
from temporalio.client import WorkflowFailureError
from temporalio.service import RPCError

from durable_navigator.cli.common import cancel_and_wait
from durable_navigator.cli.connect import TemporalSession
from durable_navigator.cli.display import plan_text, print_block, progress_line, turn_panel
from durable_navigator.cli.errors import CliError, RunFailedError, TemporalUnreachableError, stderr
from durable_navigator.cli.handles import query_run, signal_run, update_run, with_full_reasoning
from durable_navigator.cli.planfile import PLAN_FILE_HELP, dump_stage_plan, load_stage_plan, send_plan_edit
from durable_navigator.cli.progress import IndexProgressBar
from durable_navigator.cli.prompt import LineReader, Superseded, ask
from durable_navigator.cli.signals import default_sender, send_verdict
from durable_navigator.cli.stuck import STUCK_CHECK_EVERY_S, RunStuckError, stuck_message, stuck_reason
from durable_navigator.navcore.activity_io import IndexProgress
from durable_navigator.navcore.investigation import InvestigationState
from durable_navigator.navtypes.errors import validation_lines
from durable_navigator.navtypes.flightplan import FlightPlan, FlightPlanUpdate
from durable_navigator.navcore.messages import (
    QUERY_STATUS,
    SIGNAL_RAISE_BUDGET,
    SIGNAL_STOP,
    UPDATE_EDIT_FLIGHT_PLAN,
    EditFlightPlanInput,
    RaiseBudgetInput,
    StopInput,
    VerdictInput,
)
from durable_navigator.navcore.report import TurnReport

#: the investigation's whole state (its stage plan, to edit)
QUERY_INVESTIGATION = "get_investigation"

__all__ = ["follow_run", "follow_to_result", "scan_progress", "update_problems", "POLL_INTERVAL_S", "VERDICT_PROMPT", "BUDGET_PROMPT"]

POLL_INTERVAL_S = 0.5
#: a progress poll that no worker answers within this long triggers the "waiting for a worker" note
FOLLOW_QUERY_TIMEOUT = timedelta(seconds=5)
#: queries fail while the first workflow task is still pending; tolerate that long
MAX_QUERY_FAILURES = 40
VERDICT_PROMPT = "[a]pprove  [r]eject  [e]dit  [s]top > "
BUDGET_PROMPT = "budget exhausted: [r]aise  [f]inalize  [a]bort > "
#: the activity whose heartbeat details carry the indexing progress
SCAN_ACTIVITY = "navigator.scan"
EDIT_HELP = (
    "Flight-plan update as one line of YAML, e.g. "
    "{set_rules: [{glob: 'src/**', level: 4}], add_focus_paths: [{glob: src/budget}]}"
)


async def _wait_closed(handle: Any) -> None:
    try:
        await handle.result()
    except Exception:  # noqa: BLE001 - the caller reads (and reports) the result itself
        return


#: what changes on a research plan's lines as its steps run: status, turn and finding counts, phase
_STEP_PROGRESS = re.compile(r"\[\w+\] (?=r\d+:)| \(\d+ turns?, \d+ findings?\)| · phase \w+")


def plan_stage_lines(markdown: str) -> tuple[str, ...]:
    """The heading and stage lines of a stage-plan markdown, without the "current" marker."""
    kept = (line for line in markdown.splitlines() if line.startswith("### ") or line[:1].isdigit())
    return tuple(plan_text(line, current=False) for line in kept)


async def scan_progress(session: TemporalSession, handle: Any) -> IndexProgress | None:
    """The indexing progress the run's pending scan activity heartbeats, if any."""
    try:
        desc = await handle.describe()
    except RPCError:
        return None  # display only; the next poll tries again
    for pending in desc.raw_description.pending_activities:
        if pending.activity_type.name != SCAN_ACTIVITY or not pending.heartbeat_details.payloads:
            continue
        try:
            values = await session.client.data_converter.decode(pending.heartbeat_details.payloads, [IndexProgress])
        except Exception:  # noqa: BLE001 - details of another shape (an older worker): no bar, not an error
            return None
        return values[0] if values and isinstance(values[0], IndexProgress) else None
    return None


def update_problems(exc: Exception) -> str:
    """A flight-plan update's problems, each naming its field: ``set_rules.0.level: …``."""
    if isinstance(exc, ValidationError):
        return "; ".join(validation_lines(exc))
    mark = getattr(exc, "problem_mark", None)
    where = f" (column {mark.column + 1})" if mark is not None else ""
    return f"not valid YAML{where}: {getattr(exc, 'problem', None) or str(exc).splitlines()[0]}"


class _Follower:
    """State of one follow loop (what was answered, the live display)."""

    def __init__(self, session: TemporalSession, handle: Any, interactive: bool,
                 closed: asyncio.Future[Any]) -> None:
        self.session = session
        self.handle = handle
        self.interactive = interactive
        self.closed = closed
        #: completes (with why) when the question now asked is no longer open: see :meth:`asking`
        self.question: asyncio.Future[str] | None = None
        self.answered: set[tuple[str, int]] = set()  # (kind, turn) already answered
        self.budget_asked_at: int | None = None
        #: the live progress line while it is shown (a terminal only); a new one each time, see :meth:`pause`
        self.live: Live | None = None
        self.last_step: int | None = None
        self.reader = LineReader()
        self.plan_key: tuple[str, ...] = ()
        self.indexing: IndexProgressBar | None = None

    async def show(self, report: TurnReport) -> None:
        if report.status == "scanning":
            await self.show_indexing()
            return
        self.end_indexing()
        self.show_plan(report)
        if stderr.is_terminal:
            if self.live is None:
                self.live = Live(console=stderr, auto_refresh=False, transient=True)
                self.live.start()
            self.live.update(progress_line(report), refresh=True)
        elif report.step != self.last_step:
            stderr.print(progress_line(report))
        self.last_step = report.step

    async def show_indexing(self) -> None:
        """A bar with files/s while the scan indexes a large repository (heartbeat details)."""
        progress = await scan_progress(self.session, self.handle)
        if progress is None or progress.total == 0:
            return
        if self.indexing is None:
            self.pause()
            self.indexing = IndexProgressBar(stderr)
        self.indexing.update(progress.done, progress.total, progress.files_per_s)

    def end_indexing(self) -> None:
        if self.indexing is not None:
            self.indexing.close()
            self.indexing = None

    def show_plan(self, report: TurnReport) -> None:
        """Print the stage plan when it appears or its stages change (not on every criteria tick)."""
        if not report.stage_plan:
            return
        lines = plan_stage_lines(report.stage_plan)
        # a research plan's lines carry each step's status and counts: print it again when its
        # steps change, not on every turn (the progress line shows the turns)
        key = tuple(_STEP_PROGRESS.sub("", line) for line in lines)
        if key == self.plan_key:
            return
        self.plan_key = key
        self.pause()
        if report.planning_fallback:
            stderr.print(f"planning fallback: {report.planning_fallback}", markup=False)
        stderr.print("\n".join(lines), markup=False, soft_wrap=True)

    def pause(self) -> None:
        # a stopped Live is never restarted: it keeps the height of its last drawing, and its first
        # drawing after a restart moved the cursor up that many rows — erasing what was printed
        # meanwhile ("sent reject for turn 2") whenever the progress line had wrapped onto two rows
        live, self.live = self.live, None
        if live is not None:
            live.stop()

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
        print_block(stderr, turn_panel(with_full_reasoning(report), title=f"{what} · awaiting your verdict"))
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


async def _poll_status(handle: Any, closed: asyncio.Future[Any], slow: Callable[[], None]) -> TurnReport | None:
    """One status query; ``slow()`` when it has not answered within :data:`FOLLOW_QUERY_TIMEOUT`.

    The client retries a query that meets its deadline (for up to ~10 s), so a missing
    worker does not always surface as an error: the wait itself is what tells. ``None``
    when the run closed before the query answered (the query is cancelled and awaited).
    """
    query = asyncio.ensure_future(query_run(handle, QUERY_STATUS, TurnReport, FOLLOW_QUERY_TIMEOUT))
    try:
        while not query.done():
            await asyncio.wait({query, closed}, timeout=FOLLOW_QUERY_TIMEOUT.total_seconds(),
                               return_when=asyncio.FIRST_COMPLETED)
            if query.done():
                break
            if closed.done():
                return None
            slow()
        return query.result()
    finally:
        await cancel_and_wait(query)


async def follow_run(
    session: TemporalSession, handle: Any, *, interactive: bool, closed: asyncio.Future[Any] | None = None
) -> None:
    """Show progress until the run closes; in interactive mode, ask for verdicts.

    ``closed`` is the caller's ``handle.result()`` task, watched here and left to the
    caller (who reads the result from it, so the history is long-polled once); without
    it, an own waiter is made and drained before returning.
    """
    own = closed is None
    if closed is None:
        closed = asyncio.ensure_future(_wait_closed(handle))
    follower = _Follower(session, handle, interactive, closed)
    failures = 0
    warned_no_worker = False
    report_seen = False

    def waiting(why: str) -> None:
        nonlocal warned_no_worker
        if not warned_no_worker and not closed.done():
            follower.pause()
            stderr.print(f"waiting for a worker on task queue {session.task_queue!r}: {why}", markup=False)
            warned_no_worker = True

    loop = asyncio.get_running_loop()
    checked_at = loop.time()
    try:
        while not closed.done():
            if loop.time() - checked_at >= STUCK_CHECK_EVERY_S:
                # a run whose workflow task keeps failing answers no query and never closes: say why, stop waiting
                checked_at = loop.time()
                why = await stuck_reason(session.client, handle.id)
                if why is not None:
                    raise RunStuckError(stuck_message(handle.id, why))
            try:
                report = await _poll_status(handle, closed, lambda: None if report_seen else waiting(
                    f"no answer to the status query within {FOLLOW_QUERY_TIMEOUT.total_seconds():.0f}s"))
                failures = 0
                if report is None:
                    break  # the run closed meanwhile
            except TemporalUnreachableError as exc:
                # no worker answers (yet): the run is durable and waits for one, so do we
                waiting(str(exc))
                await asyncio.wait({closed}, timeout=POLL_INTERVAL_S)
                continue
            except CliError as exc:
                failures += 1
                if closed.done():
                    break
                if report_seen is False:
                    # before any answer, a failed poll (a deadline mapped to another code under
                    # load) means the same: no worker has picked the run up yet
                    waiting(str(exc))
                if failures >= MAX_QUERY_FAILURES:
                    raise
                await asyncio.wait({closed}, timeout=POLL_INTERVAL_S)
                continue
            report_seen = True
            await follower.show(report)
            if (interactive and report.awaiting_turn is not None
                    and (report.awaiting_kind or "turn", report.awaiting_turn) not in follower.answered):
                await follower.verdict(report)
            elif interactive and report.status == "awaiting_budget" and follower.budget_asked_at != report.decisions:
                await follower.budget(report)
            await asyncio.wait({closed}, timeout=POLL_INTERVAL_S)
    finally:
        follower.end_indexing()
        follower.pause()
        if own:
            await cancel_and_wait(closed)


async def follow_to_result(session: TemporalSession, handle: Any, closed: asyncio.Future[Any], interactive: bool) -> Any:
    """Follow a run until it closes and return its result (``closed`` = ``handle.result()``), errors
    mapped to exit codes; on Ctrl-C say how to pick the (durable) run up again."""
    wid = handle.id
    try:
        await follow_run(session, handle, interactive=interactive, closed=closed)
    except asyncio.CancelledError:
        if session.worker_lost:
            raise  # not a Ctrl-C: the session reports its stopped worker
        if session.embedded is not None:
            stderr.print(f"stopped following {wid}; the run is kept in the embedded server's database. Resume with "
                         f"`navigator server` + `navigator worker`, then `navigator status {wid}`.")
        else:
            stderr.print(f"stopped following {wid}; the run is kept on {session.address} and waits for a worker: "
                         f"`navigator worker` finishes it, `navigator status {wid}` shows it.")
        raise
    try:
        return await closed
    except WorkflowFailureError as exc:
        cause = getattr(exc.cause, "message", None) or str(exc.cause or exc)
        raise RunFailedError(f"run {wid} failed: {cause}; see the Web UI for the history") from None
    except RPCError as exc:
        # e.g. the embedded server another command started has stopped under us
        raise TemporalUnreachableError(
            f"lost Temporal at {session.address} while following {wid} ({exc.message[:120]}); the run "
            f"is durable: start `navigator server` + `navigator worker`, then `navigator status {wid}`"
        ) from None
