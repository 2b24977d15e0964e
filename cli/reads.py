"""Read commands: ``status``, ``log``, ``result``, ``ls``, ``ui`` (all with ``--json``)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import typer
from rich.live import Live
from pydantic import ValidationError
from temporalio.client import WorkflowFailureError
from temporalio.service import RPCError

from durable_navigator.cli.common import config_of, print_json, run_async, stdout
from durable_navigator.cli.connect import TemporalSession, open_session, ui_base_for
from durable_navigator.cli.display import (
    WIDE_COLUMNS,
    RunRow,
    children_blocks,
    decision_lines,
    investigation_panel,
    last_turn_block,
    plan_text,
    branches_panel,
    print_block,
    print_lines,
    progress_line,
    research_panel,
    result_panel,
    runs_blocks,
    runs_table,
    turn_panel,
)
from durable_navigator.cli.options import EXECUTION_STATUSES, NAVIGATOR_STATUSES
from durable_navigator.cli.errors import CliError, ExitCode, RunFailedError, handles_errors, stderr
from durable_navigator.cli.stuck import closed_error, result_unless_stuck, stuck_message, stuck_reason
from durable_navigator.cli.handles import (
    WORKFLOW_TYPE,
    describe_run,
    is_running,
    query_run,
    with_full_reasoning,
    search_attribute,
    status_name,
)
from durable_navigator.navcore.messages import QUERY_DECISION_LOG, QUERY_STATUS
from durable_navigator.navcore.report import DecisionLogView, TurnReport
from durable_navigator.navcore.requests import ExplorationResult
from durable_navigator.navcore.branches import BranchExploreResult
from durable_navigator.navcore.investigation import InvestigationResult
from durable_navigator.navcore.research import ResearchResult
from durable_navigator.workers.devserver import workflow_ui_url

__all__ = ["run_row", "fetch_status", "exit_code_for_result", "build_list_query", "ABNORMAL_STOPS",
           "STATUS_CHOICES"]

# reads_app and its commands' signatures and help: cli/signatures.py

#: stop reasons that exit 1: the run did not end the way the user asked for
ABNORMAL_STOPS = frozenset({"failed", "approval_timeout"})
#: seconds between polls of ``status --watch``
WATCH_INTERVAL_S = 1.0


#: workflows whose turns are steps of a stage plan (their plan is shown inside the verdict panel)
_STAGED = ("research", "investigation")

#: the workflow types ``ls`` lists and ``result`` reads (explorations, research runs, investigations, branches)
RUN_WORKFLOW_TYPES = (WORKFLOW_TYPE, "ResearchWorkflow", "InvestigationWorkflow", "ExploreBranchesWorkflow")
#: ``navigator explore --branches N``'s workflow type: its branches keep the decision logs
_BRANCHES = "ExploreBranchesWorkflow"
_RESULT_TYPES: dict[str, type] = {WORKFLOW_TYPE: ExplorationResult, "ResearchWorkflow": ResearchResult,
                                  "InvestigationWorkflow": InvestigationResult,
                                  "ExploreBranchesWorkflow": BranchExploreResult}


def exit_code_for_result(
    result: ExplorationResult | ResearchResult | InvestigationResult | BranchExploreResult,
) -> ExitCode:
    """0 for a normal stop, 1 for failed / approval_timeout."""
    return ExitCode.RUN_FAILED if result.stop_reason.value in ABNORMAL_STOPS else ExitCode.OK


def run_row(entry: Any) -> RunRow:
    """A list entry / description as a JSON-able row (the ``ls --json`` shape)."""
    return {
        "workflow_id": entry.id,
        "run_id": entry.run_id,
        "workflow_type": entry.workflow_type,
        "status": status_name(entry.status),
        "navigator_status": search_attribute(entry, "NavigatorStatus"),
        "repo": search_attribute(entry, "NavigatorRepo"),
        "cost_usd": search_attribute(entry, "NavigatorCostUsd"),
        "iteration": search_attribute(entry, "NavigatorIteration"),
        "start_time": entry.start_time.isoformat() if entry.start_time else None,
        "close_time": entry.close_time.isoformat() if entry.close_time else None,
        "goal": None,  # filled from the memo by the async callers
    }


async def _memo_goal(entry: Any) -> str | None:
    try:
        memo = await entry.memo()
    except Exception:  # noqa: BLE001 - a memo we cannot decode just leaves the column empty
        return None
    goal = memo.get("goal") if isinstance(memo, dict) else None
    return str(goal) if goal is not None else None


async def fetch_status(session: TemporalSession, workflow_id: str) -> dict[str, Any]:
    """Description + the ``get_status`` turn report (running) or the result (finished).

    ``report`` holds the turn report a running run answers: step, cost of the turn and in
    total, the model's reasoning and the proposed change (``awaiting_turn`` set while a
    human is asked). A closed run answers no query without a worker; ``result`` then holds
    its result, read from history.
    """
    _, desc = await describe_run(session.client, workflow_id)
    handle = session.client.get_workflow_handle(workflow_id, result_type=_RESULT_TYPES.get(desc.workflow_type or ""))
    row = run_row(desc)
    row["goal"] = await _memo_goal(desc)
    row["ui_url"] = session.ui_link(workflow_id)
    row["report"] = None
    row["result"] = None
    row["error"] = None
    if is_running(desc):
        stuck = await stuck_reason(session.client, workflow_id)
        if stuck is not None:
            row["error"] = stuck_message(workflow_id, stuck)  # it answers no query: say why instead
            return row
        report = await query_run(handle, QUERY_STATUS, TurnReport)
        row["report"] = with_full_reasoning(report).model_dump(mode="json")
    elif row["status"] == "completed" and desc.workflow_type in _RESULT_TYPES:
        row["result"] = (await handle.result()).model_dump(mode="json")
    elif row["status"] != "completed":
        row["error"] = await closed_error(handle)
    return row


def _print_status(row: dict[str, Any]) -> None:
    stdout.print(f"[bold]{row['workflow_id']}[/bold] · {row['status']} · repo {row.get('repo') or '?'}")
    if row.get("goal"):
        label = "question" if row.get("workflow_type") == "ResearchWorkflow" else "goal"
        stdout.print(f"{label}: {row['goal']}", markup=False, soft_wrap=True)
    if row["report"]:
        report = TurnReport.model_validate(row["report"])
        if report.planning_fallback:
            stdout.print(f"planning fallback: {report.planning_fallback}", markup=False)
        if report.model_switches:
            stdout.print(f"model: {report.model} · routing switches:", markup=False)
            for line in report.model_switches:
                stdout.print(f"  {line}", markup=False, soft_wrap=True)
        # a research run or investigation awaiting a verdict shows its plan inside the panel below
        if report.stage_plan and not (report.workflow in _STAGED and report.awaiting_turn is not None):
            stdout.print(plan_text(report.stage_plan), markup=False, soft_wrap=True)
        if report.children:
            for line in children_blocks(report.children):
                stdout.print(line, markup=False, soft_wrap=True)
        if report.awaiting_turn is not None:
            if report.workflow in _STAGED:
                plan = "research plan" if report.workflow == "research" else "stage plan"
                what = (f"{plan} (round {report.awaiting_turn})" if report.awaiting_kind == "plan"
                        else f"the findings of step {report.awaiting_turn}")
            else:
                what = "stage plan" if report.awaiting_kind == "plan" else f"turn {report.awaiting_turn}"
            print_block(stdout, turn_panel(report, title=f"{what} · awaiting a verdict"))
            plan = " --plan" if report.awaiting_kind == "plan" else ""
            wid = row["workflow_id"]
            stdout.print(f"answer: navigator approve {wid}{plan} | navigator reject {wid}{plan} -f \"…\" | "
                         f"navigator stop {wid}", markup=False)
        else:
            stdout.print(progress_line(report))
            if report.status == "awaiting_budget":
                wid = row["workflow_id"]
                stdout.print(f"budget exhausted ({report.cost_total_usd} of {report.budget_usd}): the run waits "
                             f"for a decision: navigator budget {wid} 0.50 (raise and go on) | navigator stop {wid} "
                             "(finish with what exists)", markup=False, soft_wrap=True)
            if report.decisions:
                print_block(stdout, last_turn_block(report))
    if row.get("result") and row.get("workflow_type") == "ResearchWorkflow":
        print_block(stdout, research_panel(ResearchResult.model_validate(row["result"])))
    elif row.get("result") and row.get("workflow_type") == "InvestigationWorkflow":
        print_block(stdout, investigation_panel(InvestigationResult.model_validate(row["result"])))
    elif row.get("result") and row.get("workflow_type") == "ExploreBranchesWorkflow":
        print_block(stdout, branches_panel(BranchExploreResult.model_validate(row["result"])))
    elif row.get("result"):
        print_block(stdout, result_panel(ExplorationResult.model_validate(row["result"])))
    if row.get("ui_url"):
        stdout.print(f"Web UI: {row['ui_url']}", markup=False, soft_wrap=True)
    if row.get("error"):
        stderr.print(f"Error: {row['error']}", markup=False, soft_wrap=True)


@handles_errors
def run_status(
    ctx: typer.Context,
    workflow_id: str,
    watch: bool,
    json_out: bool,
) -> None:
    """The ``navigator status`` command (its options and help: :mod:`cli.signatures`)."""
    row = run_async(_status(ctx, workflow_id, watch, json_out))
    # a failed, terminated or stuck run: its error is printed above; exit 1 as `result` does
    raise typer.Exit(int(ExitCode.RUN_FAILED if row.get("error") else ExitCode.OK))


async def _status(ctx: typer.Context, workflow_id: str, watch: bool, json_out: bool) -> dict[str, Any]:
    async with open_session(config_of(ctx)) as session:
        row = await fetch_status(session, workflow_id)
        if not watch:
            print_json(row) if json_out else _print_status(row)
            return row
        if json_out:
            # one JSON object per line whenever something changes (ndjson)
            last = None
            while True:
                line = json.dumps(row, sort_keys=True, default=str)
                if line != last:
                    typer.echo(line)
                    last = line
                if row["status"] != "running" or row["error"]:
                    return row
                await asyncio.sleep(WATCH_INTERVAL_S)
                row = await fetch_status(session, workflow_id)
        return await _watch_human(session, workflow_id, row)


async def _watch_human(session: TemporalSession, workflow_id: str, row: dict[str, Any]) -> dict[str, Any]:
    """A live line on a terminal; one line per new step when piped."""
    live = Live(console=stdout, auto_refresh=False, transient=True) if stdout.is_terminal else None
    last_step = None
    try:
        while row["status"] == "running" and not row["error"]:
            if row["report"]:
                report = TurnReport.model_validate(row["report"])
                if live is not None:
                    live.start()
                    live.update(progress_line(report), refresh=True)
                elif report.step != last_step:
                    stdout.print(progress_line(report))
                last_step = report.step
            await asyncio.sleep(WATCH_INTERVAL_S)
            row = await fetch_status(session, workflow_id)
    finally:
        if live is not None:
            live.stop()
    _print_status(row)
    return row


def _log_from_report(res: ExplorationResult | ResearchResult) -> DecisionLogView | None:
    """The decision log kept in a finished run's report.json, if readable here."""
    if not res.report_path or not isinstance(res, (ExplorationResult, ResearchResult)):
        return None  # an investigation's report.json counts its decisions only: ask a worker
    try:
        report = json.loads(Path(res.report_path).read_text(encoding="utf-8"))
        return DecisionLogView(entries=report.get("decisions", []), notes=report.get("notes", []),
                               children=report.get("children", []))
    except (OSError, ValueError, ValidationError):
        return None  # written on another machine, moved or edited: ask a worker instead


@handles_errors
def run_log(
    ctx: typer.Context,
    workflow_id: str,
    json_out: bool,
) -> None:
    """The ``navigator log`` command (its options and help: :mod:`cli.signatures`)."""

    async def go() -> DecisionLogView:
        async with open_session(config_of(ctx)) as session:
            _, desc = await describe_run(session.client, workflow_id)
            result_type = _RESULT_TYPES.get(desc.workflow_type or "")
            handle = session.client.get_workflow_handle(workflow_id, result_type=result_type)
            completed = not is_running(desc) and status_name(desc.status) == "completed"
            if desc.workflow_type == _BRANCHES:
                # no decisions of its own (no get_decision_log query): each branch is an exploration with its log
                children = ((await handle.result()).children if completed
                            else (await query_run(handle, QUERY_STATUS, TurnReport)).children)
                return DecisionLogView(entries=[], children=children)
            if result_type is not None and completed:
                view = _log_from_report(await handle.result())
                if view is not None:
                    return view
            return await query_run(handle, QUERY_DECISION_LOG, DecisionLogView)

    view = run_async(go())
    entries = view.entries
    if json_out:
        print_json(view)
    elif not entries and view.children and not view.notes:
        stdout.print(f"{workflow_id}: no decisions of its own; each run it started has its log "
                     "(`navigator log CHILD_ID`):", markup=False)
    elif not entries:
        stdout.print(f"{workflow_id}: no decisions yet")
    else:
        print_lines(stdout, decision_lines(entries))
    if view.children and not json_out:
        for line in children_blocks(view.children):
            stdout.print(line, markup=False, soft_wrap=True)
    for note in view.notes if not json_out else []:
        stdout.print(f"  note: {note.kind} from {note.sender} (turn {note.turn}): {note.note}", markup=False,
                     )


@handles_errors
def run_result(
    ctx: typer.Context,
    workflow_id: str,
    wait: bool,
    json_out: bool,
) -> None:
    """The ``navigator result`` command (its options and help: :mod:`cli.signatures`)."""

    async def go() -> tuple[ExplorationResult | ResearchResult | InvestigationResult | BranchExploreResult,
                            str | None]:
        async with open_session(config_of(ctx)) as session:
            _, desc = await describe_run(session.client, workflow_id)
            result_type = _RESULT_TYPES.get(desc.workflow_type or "")
            if result_type is None:
                raise CliError(f"run {workflow_id} is a {desc.workflow_type}, not an exploration, research run or "
                               "investigation; see `navigator batch` for batches")
            handle = session.client.get_workflow_handle(workflow_id, result_type=result_type)
            if is_running(desc) and not wait:
                raise CliError(f"run {workflow_id} is still running; pass --wait or check `navigator status`")
            try:
                res = await result_unless_stuck(session.client, handle)
            except WorkflowFailureError as exc:
                cause = getattr(exc.cause, "message", None) or str(exc.cause or exc)
                raise RunFailedError(f"run {workflow_id} failed: {cause}") from None
            except RPCError as exc:
                raise RunFailedError(f"cannot read the result of {workflow_id}: {exc.message}") from None
            return res, session.ui_link(workflow_id)

    res, link = run_async(go())
    if json_out:
        print_json({**res.model_dump(mode="json"), "ui_url": link})
    elif isinstance(res, ResearchResult):
        print_block(stdout, research_panel(res))
        if res.answer_path:
            stdout.print(f"answer: {res.answer_path}", markup=False, soft_wrap=True)
        if res.report_path:
            stdout.print(f"report: {res.report_path}", markup=False, soft_wrap=True)
        if link:
            stdout.print(f"Web UI: {link}", markup=False, soft_wrap=True)
    elif isinstance(res, InvestigationResult):
        print_block(stdout, investigation_panel(res))
        if res.report_path:
            stdout.print(f"report: {res.report_path}", markup=False, soft_wrap=True)
        if res.report_json_path:
            stdout.print(f"report.json: {res.report_json_path}", markup=False, soft_wrap=True)
        if link:
            stdout.print(f"Web UI: {link}", markup=False, soft_wrap=True)
    elif isinstance(res, BranchExploreResult):
        print_block(stdout, branches_panel(res))
        if res.context_path:
            stdout.print(f"context pack: {res.context_path}", markup=False, soft_wrap=True)
        if link:
            stdout.print(f"Web UI: {link}", markup=False, soft_wrap=True)
    else:
        print_block(stdout, result_panel(res))
        if res.context_path:
            stdout.print(f"context pack: {res.context_path}", markup=False, soft_wrap=True)
        if res.report_path:
            stdout.print(f"report: {res.report_path}", markup=False, soft_wrap=True)
        if link:
            stdout.print(f"Web UI: {link}", markup=False, soft_wrap=True)
    raise typer.Exit(int(exit_code_for_result(res)))


STATUS_CHOICES = (*EXECUTION_STATUSES, *NAVIGATOR_STATUSES)


def build_list_query(status_filter: str | None, repo: str | None,
                     workflow_types: tuple[str, ...] = RUN_WORKFLOW_TYPES) -> str:
    """The visibility query of ``ls``: a Temporal status (``running``, ``completed``, …) filters on
    ``ExecutionStatus``; a navigator status (``awaiting_approval``, ``thinking``, …) on the
    ``NavigatorStatus`` search attribute; ``workflow_types`` (every run type ``ls`` lists) narrows it
    for a caller that reads only some of them (the MCP tools)."""
    types = ", ".join(f"'{t}'" for t in workflow_types)
    clauses = [f"WorkflowType IN ({types})"]
    if status_filter in EXECUTION_STATUSES:
        clauses.append(f"ExecutionStatus = '{EXECUTION_STATUSES[status_filter]}'")
    elif status_filter:
        clauses.append(f"NavigatorStatus = '{_quote(status_filter)}'")
    if repo:
        clauses.append(f"NavigatorRepo = '{_quote(repo)}'")
    return " AND ".join(clauses)


def _quote(value: str) -> str:
    return value.replace("\\", "\\\\").replace("'", "\\'")


def _is_utf8(text: str) -> bool:
    """Whether ``text`` encodes as UTF-8 (a non-UTF-8 argument byte arrives as a lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@handles_errors
def run_list_runs(
    ctx: typer.Context,
    status_filter: str | None,
    repo: str | None,
    limit: int,
    json_out: bool,
) -> None:
    """The ``navigator ls`` command (its options and help: :mod:`cli.signatures`)."""
    if status_filter and status_filter not in STATUS_CHOICES:
        raise CliError(f"--status must be one of {', '.join(STATUS_CHOICES)}, got {status_filter!r}")
    if repo is not None and not _is_utf8(repo):
        # no run records such a path (a request's repo_path is UTF-8 text), and the query could not carry it
        raise CliError(f"--repo {repo!r} is not valid UTF-8, so no run can have it as its repository; pass the "
                       "path as the run recorded it (`navigator ls` shows it)")
    try:
        if repo and Path(repo).expanduser().is_dir():
            # runs record the absolute, resolved repository path
            repo = str(Path(repo).expanduser().resolve())
    except (OSError, ValueError, RuntimeError):
        pass  # too long for the file system, a NUL, a loop: no directory, so matched as the text given
    query = build_list_query(status_filter, repo)

    async def go() -> list[RunRow]:
        rows: list[RunRow] = []
        async with open_session(config_of(ctx)) as session:
            try:
                async for entry in session.client.list_workflows(query, limit=limit):
                    row = run_row(entry)
                    row["goal"] = await _memo_goal(entry)
                    rows.append(row)
            except RPCError as exc:
                raise CliError(f"the server refused the list query ({exc.message[:160]}); are the "
                               "navigator search attributes registered? see deploy/README.md") from None
        return rows

    rows = run_async(go())
    if json_out:
        print_json(rows)
    elif not rows:
        stdout.print("no navigator runs match")
    elif stdout.width >= WIDE_COLUMNS:
        print_block(stdout, runs_table(rows))
    else:
        for line in runs_blocks(rows):
            stdout.print(line, markup=False)


@handles_errors
def run_ui(
    ctx: typer.Context,
    workflow_id: str,
    json_out: bool,
) -> None:
    """The ``navigator ui`` command (its options and help: :mod:`cli.signatures`)."""
    config = config_of(ctx)
    base = ui_base_for(config)
    if base is None:
        raise CliError("the Web UI address of this server is unknown; set TEMPORAL_UI_URL or temporal.ui_url")
    url = workflow_ui_url(base, config.temporal.namespace, workflow_id)

    async def exists() -> None:
        # a link to a run that does not exist is a dead end: exit 4, as every command that names a run
        async with open_session(config) as session:
            await describe_run(session.client, workflow_id)

    run_async(exists())
    print_json({"workflow_id": workflow_id, "url": url}) if json_out else typer.echo(url)
