"""Navigator runs as the MCP tools see them: start, follow with progress, state, stop, list.

Two kinds of run: explorations (``NavigatorWorkflow``, the ``explore`` tool, a context
pack) and research runs (``ResearchWorkflow``, the ``ask`` tool, a cited answer). Both
answer the same ``status`` / ``decision_log`` queries and ``stop`` signal, so following,
stopping and listing are shared; only the outcome differs.

Everything goes through the Temporal client by the workflow's public names (as the
CLI does, ``cli/handles.py``). The pack is the run's ``context.md`` as written: the
run held it to the client's token budget, so a later ``run_status`` — from another
connection, after the first one dropped — returns the same text.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError, WorkflowHandle
from temporalio.service import RPCError

from durable_navigator.activities.artifacts import ArtifactStore
from durable_navigator.cli import launch
from durable_navigator.cli.common import cancel_and_wait
from durable_navigator.cli.connect import TemporalSession
from durable_navigator.cli.errors import CliError, RunNotFoundError
from durable_navigator.cli.handles import describe_run, query_run, signal_run
from durable_navigator.cli.mcpserver.models import KIND_EXPLORE, AskOutcome, RunOutcome, RunState, RunSummary
from durable_navigator.cli.mcpserver.pack import answer_uri, context_uri, read_answer, read_context, report_uri
from durable_navigator.cli.mcpserver.paths import AllowedRoots
from durable_navigator.cli.reads import build_list_query, run_row
from durable_navigator.cli.stuck import STUCK_CHECK_EVERY_S, RunStuckError, stuck_message, stuck_reason, terminate_stuck
from durable_navigator.navcore.navigator.messages import QUERY_DECISION_LOG, QUERY_STATUS, SIGNAL_STOP, StopInput
from durable_navigator.navcore.run.budget import format_usd
from durable_navigator.navcore.navigator.report import DecisionLogView, TurnReport
from durable_navigator.navcore.navigator.requests import ExplorationRequest, ExplorationResult
from durable_navigator.navcore.research.research import ResearchRequest, ResearchResult
from durable_navigator.navcore.run_kinds import EXPLORE, RESEARCH, RUN_KINDS, run_kind_of
from durable_navigator.navcore.navigator.state import DecisionLogEntry
from durable_navigator.navcore.run.sources import display_root
from durable_navigator.navtypes.errors import NavigatorError
from durable_navigator.repomap.tokens import count_tokens

__all__ = [
    "ProgressSink",
    "POLL_INTERVAL_S",
    "start_run",
    "start_research",
    "follow_run",
    "outcome_of",
    "ask_outcome_of",
    "answer_of",
    "run_state",
    "finished_result",
    "stop_run",
    "list_runs",
]

#: how often a followed run is asked for its status (a query costs one workflow task on the worker)
POLL_INTERVAL_S = 0.25
#: with allowed roots, list_runs reads at most this many times ``limit`` runs to find ``limit`` of their trees
LIST_SCAN_FACTOR = 20
#: who the stop signal says sent it
SENDER = "mcp"

#: ``(progress, total, message)`` → a progress notification
ProgressSink = Callable[[float, float | None, str], Awaitable[None]]
#: the workflow types the tools read, and what kind of run each is (explorations and research runs)
KINDS = {k.workflow_type: k.mcp_kind for k in RUN_KINDS if k.mcp_kind is not None}


def _usd(text: str | None) -> float | None:
    return float(text.lstrip("$")) if text else None


def _step_message(step: int, cap: int, status: str, map_tokens: int, map_budget: int, cost: str, budget: str,
                  research: bool) -> str:
    if research:  # a research run's steps are executor turns; its map is the planner's coarse one
        return f"turn {step}/{cap} · {status} · {cost} of {budget}"
    return f"step {step}/{cap} · {status} · map {map_tokens}/{map_budget} tokens · {cost} of {budget}"


def _shown_repo(recorded: str | None) -> str | None:
    """The repository a run records, as a user names it (a snapshot's origin path, not its locator)."""
    return display_root(recorded) if recorded else recorded


async def start_run(session: TemporalSession, request: ExplorationRequest, run_id: str) -> WorkflowHandle:
    """Start the navigator workflow as ``navigator explore`` does (memo, Web UI summary and details)."""
    return await launch.start_run(session, EXPLORE, request, run_id, text=request.goal, repo=request.repo_path,
                                  model=request.model, verb="explore", settings=launch.request_settings(request))


async def start_research(session: TemporalSession, request: ResearchRequest, run_id: str) -> WorkflowHandle:
    """Start the research workflow as ``navigator ask`` does (question as goal, repository, kind)."""
    return await launch.start_run(session, RESEARCH, request, run_id, text=request.question, repo=request.repo_path,
                                  model=request.model, verb="ask", label="Question",
                                  settings=launch.research_settings(request))


class _Progress:
    """One notification per navigator step, with strictly increasing progress values.

    Steps are polled; a step that went by between two polls is filled in from the decision
    log (its action, map size and decision cost), so every step still gets its notification.
    """

    def __init__(self, handle: WorkflowHandle, sink: ProgressSink, cap: int, research: bool) -> None:
        self.handle, self.sink, self.cap, self.research = handle, sink, cap, research
        self.last = -1

    async def report(self, report: TurnReport) -> None:
        if report.step <= self.last:
            return
        await self._catch_up(report.step, report.map_token_budget, report.budget_usd)
        await self.sink(float(report.step), float(self.cap), _step_message(
            report.step, self.cap, report.status, report.map_tokens, report.map_token_budget,
            report.cost_total_usd, report.budget_usd, self.research))
        self.last = report.step

    async def _catch_up(self, before: int, map_budget: int, budget: str) -> None:
        """Notifications for the logged steps after the last one sent and before ``before``."""
        if before <= self.last + 1:
            return
        try:
            view = await query_run(self.handle, QUERY_DECISION_LOG, DecisionLogView)
        except CliError:
            return  # the next notification still says where the run is
        spent = 0
        by_step: dict[int, tuple[DecisionLogEntry, int]] = {}
        for entry in view.entries:
            spent += entry.cost_micros
            by_step[entry.step] = (entry, spent)
        for step in range(self.last + 1, before):
            if step in by_step:
                entry, cost = by_step[step]
                await self.sink(float(step), float(self.cap), _step_message(
                    step, self.cap, entry.action, entry.map_tokens_after, map_budget, format_usd(cost), budget,
                    self.research))
                self.last = step

    async def finished(self, result: ExplorationResult | ResearchResult) -> None:
        final_message: str
        if isinstance(result, ResearchResult):
            await self._catch_up(result.iterations + 1, 0, f"${result.max_usd:.4f}")
            final_message = (f"finished after {result.iterations} turns: {result.stop_reason.value} · "
                             f"{result.citations} citations · ${result.cost_usd:.4f}")
        else:
            meta = result.map_metadata
            await self._catch_up(result.iterations + 1, meta.token_budget if meta else 0, f"${result.max_usd:.4f}")
            final_message = (f"finished after {result.iterations} steps: {result.stop_reason.value} · "
                             f"map {meta.tokens_used if meta else 0} tokens · ${result.cost_usd:.4f}")
        final = float(max(self.cap, self.last + 1))
        await self.sink(final, final, final_message)


async def follow_run(handle: WorkflowHandle, sink: ProgressSink, cap: int, research: bool = False,
                     client: Client | None = None) -> Any:
    """Follow the run to its result, reporting each step (research: each executor turn); the result's long
    poll is always drained. The result is the handle's: an ``ExplorationResult`` or a ``ResearchResult``."""
    closed: asyncio.Future[Any] = asyncio.ensure_future(handle.result())
    progress = _Progress(handle, sink, cap, research)
    loop = asyncio.get_running_loop()
    checked_at = loop.time()
    try:
        while not closed.done():
            if loop.time() - checked_at >= STUCK_CHECK_EVERY_S:
                checked_at = loop.time()
                why = await stuck_reason(client, handle.id) if client is not None else None
                if why is not None:
                    raise RunStuckError(stuck_message(handle.id, why))
            try:
                report = await query_run(handle, QUERY_STATUS, TurnReport)
            except CliError:
                pass  # no worker has picked the run up yet, or it just closed: the loop condition decides
            else:
                await progress.report(report)
            await asyncio.wait({closed}, timeout=POLL_INTERVAL_S)
        try:
            result = await closed
        except WorkflowFailureError as exc:
            cause = getattr(exc.cause, "message", None) or str(exc.cause or exc)
            raise CliError(f"run {handle.id} failed: {cause}") from None
        await progress.finished(result)
        return result
    finally:
        await cancel_and_wait(closed)


def outcome_of(result: ExplorationResult, ui_url: str | None, store: ArtifactStore) -> tuple[RunOutcome, str]:
    """The structured outcome and the pack text (context.md, within the run's token budget)."""
    text = read_context(result, store)
    run_id = result.workflow_id
    pack = result.pack
    meta = result.map_metadata
    outcome = RunOutcome(
        run_id=run_id, stop_reason=result.stop_reason.value, stop_detail=result.stop_detail,
        cost_usd=float(result.cost_usd), budget_usd=float(result.max_usd), iterations=result.iterations,
        token_budget=pack.token_budget if pack else (meta.token_budget if meta else 0),
        pack_tokens=count_tokens(text), map_tokens=pack.map_tokens if pack else (meta.tokens_used if meta else None),
        trimmed=pack.trimmed if pack else False,
        context_uri=context_uri(run_id), report_uri=report_uri(run_id), ui_url=ui_url,
    )
    return outcome, text


def ask_outcome_of(result: ResearchResult, ui_url: str | None) -> AskOutcome:
    """The structured outcome of a research run (its answer is :func:`answer_of`)."""
    run_id = result.workflow_id
    return AskOutcome(
        run_id=run_id, stop_reason=result.stop_reason.value, stop_detail=result.stop_detail,
        completed_normally=result.completed_normally, cost_usd=float(result.cost_usd),
        budget_usd=float(result.max_usd), rounds=result.rounds, steps=result.steps, iterations=result.iterations,
        citations=result.citations, citations_fixed=result.citations_fixed, answer_uri=answer_uri(run_id),
        report_uri=report_uri(run_id), ui_url=ui_url,
    )


def answer_of(result: ResearchResult, store: ArtifactStore) -> str:
    """The cited answer (answer.md); its first lines when the worker wrote it where this server cannot read."""
    try:
        return read_answer(result, store)
    except NavigatorError:  # not readable here: the summary in the result still says what it found
        if result.summary:
            return (f"{result.summary}\n\n(the whole answer is not readable on this machine: "
                    f"{result.answer_path or 'no answer file'})")
        raise


async def _describe(session: TemporalSession, roots: AllowedRoots, run_id: str) -> tuple[WorkflowHandle, Any, dict]:
    handle, desc = await describe_run(session.client, run_id)
    kind = run_kind_of(desc.workflow_type)
    result_type = kind.result_type if kind is not None and kind.mcp_kind is not None else None
    if result_type is None:
        raise RunNotFoundError(f"{run_id} is not a navigator run (it is a {desc.workflow_type})")
    handle = session.client.get_workflow_handle(run_id, result_type=result_type)
    try:
        memo = await desc.memo()
    except Exception:  # noqa: BLE001 - an undecodable memo only loses the goal and repository
        memo = {}
    memo = memo if isinstance(memo, dict) else {}
    roots.recorded(_shown_repo(memo.get("repo") or run_row(desc)["repo"]), run_id)
    return handle, desc, memo


async def finished_result(session: TemporalSession, roots: AllowedRoots,
                          run_id: str) -> tuple[ExplorationResult | ResearchResult, dict]:
    """The result of a closed run (``CliError`` while it runs or when it failed)."""
    handle, desc, memo = await _describe(session, roots, run_id)
    if desc.status == WorkflowExecutionStatus.RUNNING:
        raise CliError(f"run {run_id} is still running; ask run_status until it has finished")
    try:
        return await handle.result(), memo
    except WorkflowFailureError as exc:
        cause = getattr(exc.cause, "message", None) or str(exc.cause or exc)
        raise CliError(f"run {run_id} did not finish normally: {cause}") from None


async def run_state(session: TemporalSession, roots: AllowedRoots, run_id: str) -> tuple[RunState, str | None]:
    """Where the run is; a finished run's outcome and text (an exploration's fitted pack, a research run's answer)."""
    handle, desc, memo = await _describe(session, roots, run_id)
    row = run_row(desc)
    state = RunState(run_id=run_id, kind=KINDS[desc.workflow_type], state=row["status"],
                     navigator_status=row["navigator_status"],
                     repo=_shown_repo(memo.get("repo") or row["repo"]), goal=memo.get("goal"),
                     ui_url=session.ui_link(run_id))
    if desc.status == WorkflowExecutionStatus.RUNNING:
        stuck = await stuck_reason(session.client, run_id)
        if stuck is not None:
            state.error = stuck_message(run_id, stuck)
            return state, None
        try:
            report = await query_run(handle, QUERY_STATUS, TurnReport)
        except CliError as exc:
            state.error = f"no live status: {exc}"
            return state, None
        state.navigator_status, state.step = report.status, report.step
        state.cost_usd, state.budget_usd = _usd(report.cost_total_usd), _usd(report.budget_usd)
        state.map_tokens, state.map_token_budget = report.map_tokens, report.map_token_budget
        return state, None
    try:
        result = await handle.result()
    except WorkflowFailureError as exc:
        state.error = getattr(exc.cause, "message", None) or str(exc.cause or exc)
        return state, None
    if isinstance(result, ResearchResult):
        asked = ask_outcome_of(result, state.ui_url)
        state.outcome, state.cost_usd, state.budget_usd = asked, asked.cost_usd, asked.budget_usd
        state.step = result.iterations
        return state, answer_of(result, session.artifact_store())
    outcome, text = outcome_of(result, state.ui_url, session.artifact_store())
    state.outcome, state.cost_usd, state.budget_usd = outcome, outcome.cost_usd, outcome.budget_usd
    state.step, state.map_tokens = result.iterations, outcome.map_tokens
    return state, text


async def stop_run(session: TemporalSession, roots: AllowedRoots, run_id: str, reason: str) -> None:
    """Send ``stop``: the run finalizes its best map so far (``RunNotFoundError`` once it has closed)."""
    _, desc, _ = await _describe(session, roots, run_id)
    if desc.status != WorkflowExecutionStatus.RUNNING:
        raise RunNotFoundError(f"run {run_id} has already finished ({desc.status.name.lower() if desc.status else '?'});"
                               " run_status returns its result")
    await signal_run(session.client, run_id, SIGNAL_STOP, StopInput(reason=reason[:500], sender=SENDER))
    stuck = await terminate_stuck(session.client, run_id, reason[:500], SENDER)
    if stuck is not None:
        raise RunStuckError(f"run {run_id} could not take the stop ({stuck}); it was terminated instead, "
                            "without a context pack")


async def list_runs(session: TemporalSession, roots: AllowedRoots, repo: str | None, limit: int) -> list[RunSummary]:
    """Navigator runs (explorations and research runs), newest first, of ``repo`` (resolved) or of every allowed
    tree."""
    query = build_list_query(None, repo, tuple(KINDS))  # investigations and branch runs are not MCP runs
    runs: list[RunSummary] = []
    try:
        # with allowed roots, runs of other trees are skipped: read further, but not without end
        scan = limit if not roots.restricted else limit * LIST_SCAN_FACTOR
        async for entry in session.client.list_workflows(query, limit=scan):
            row = run_row(entry)
            try:
                memo = await entry.memo()
            except Exception:  # noqa: BLE001 - the goal column just stays empty
                memo = {}
            memo = memo if isinstance(memo, dict) else {}
            run_repo: str | None = _shown_repo(memo.get("repo") or row["repo"])
            if roots.restricted and not (run_repo and roots.contains(Path(run_repo))):
                continue
            runs.append(RunSummary(
                run_id=row["workflow_id"], kind=KINDS.get(row["workflow_type"], KIND_EXPLORE), state=row["status"],
                navigator_status=row["navigator_status"],
                repo=run_repo, goal=memo.get("goal"),
                cost_usd=row["cost_usd"], iteration=row["iteration"], start_time=row["start_time"],
                close_time=row["close_time"],
            ))
            if len(runs) >= limit:
                break
    except RPCError as exc:
        raise CliError(f"the server refused the list query ({exc.message[:160]}); are the navigator "
                       "search attributes registered? see deploy/README.md") from None
    return runs
