"""Follow a run from the terminal: live progress, and the interactive turn loop.

Progress comes from polling the ``get_status`` query (the workflow's
``TurnReport``). In interactive mode, each turn waiting for a verdict is shown
with its proposed flight-plan diff and answered, and a run parked on its budget asks raise /
finalize / abort: those questions live in :mod:`cli.follow_prompts`. While the scan indexes a
large repository, a progress bar shows files per second (the scan activity's heartbeat details).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Any

from rich.live import Live
from temporalio.client import WorkflowFailureError
from temporalio.service import RPCError

from durable_navigator.cli.common import cancel_and_wait
from durable_navigator.cli.connect import TemporalSession
from durable_navigator.cli.display import plan_text, progress_line
from durable_navigator.cli.errors import CliError, RunFailedError, TemporalUnreachableError, stderr
from durable_navigator.cli.follow_prompts import (
    BUDGET_PROMPT,
    FOLLOW_QUERY_TIMEOUT,
    POLL_INTERVAL_S,
    VERDICT_PROMPT,
    RunPrompts,
    update_problems,
)
from durable_navigator.cli.handles import query_run
from durable_navigator.cli.progress import IndexProgressBar
from durable_navigator.cli.stuck import STUCK_CHECK_EVERY_S, RunStuckError, stuck_message, stuck_reason
from durable_navigator.navcore.navigator.activity_io import IndexProgress
from durable_navigator.navcore.navigator.messages import QUERY_STATUS
from durable_navigator.navcore.navigator.report import TurnReport

# the prompts and update_problems are re-exported: their import path has been cli.follow
__all__ = ["follow_run", "follow_to_result", "scan_progress", "update_problems", "POLL_INTERVAL_S", "VERDICT_PROMPT",
           "BUDGET_PROMPT"]

#: queries fail while the first workflow task is still pending; tolerate that long
MAX_QUERY_FAILURES = 40
#: the activity whose heartbeat details carry the indexing progress
SCAN_ACTIVITY = "navigator.scan"


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


class _Follower(RunPrompts):
    """State of one follow loop: the questions (:class:`RunPrompts`) and the live display."""

    def __init__(self, session: TemporalSession, handle: Any, interactive: bool,
                 closed: asyncio.Future[Any]) -> None:
        super().__init__(session, handle, closed)
        self.interactive = interactive
        #: the live progress line while it is shown (a terminal only); a new one each time, see :meth:`pause`
        self.live: Live | None = None
        self.last_step: int | None = None
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
