"""Read commands: ``status``, ``log``, ``result``, ``ls``, ``ui`` (all with ``--json``)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.live import Live
from temporalio.client import WorkflowFailureError
from temporalio.service import RPCError

from durable_navigator.cli.common import JsonOpt, WorkflowIdArg, config_of, print_json, run_async, stdout
from durable_navigator.cli.connect import TemporalSession, open_session, ui_base_for
from durable_navigator.cli.display import (
    RunRow,
    children_table,
    decision_table,
    investigation_panel,
    progress_line,
    research_panel,
    result_panel,
    runs_table,
)
from durable_navigator.cli.errors import CliError, ExitCode, RunFailedError, handles_errors
from durable_navigator.cli.handles import (
    WORKFLOW_TYPE,
    describe_run,
    is_running,
    query_run,
    search_attribute,
    status_name,
)
from durable_navigator.navcore.messages import QUERY_DECISION_LOG, QUERY_STATUS
from durable_navigator.navcore.report import DecisionLogView, TurnReport
from durable_navigator.navcore.requests import ExplorationResult
from durable_navigator.navcore.branches import BranchExploreResult
from durable_navigator.navcore.investigation import InvestigationResult
from durable_navigator.navcore.research import ResearchResult
from durable_navigator.navcore.state import Status
from durable_navigator.workers.devserver import workflow_ui_url

__all__ = ["reads_app", "run_row", "fetch_status", "exit_code_for_result", "ABNORMAL_STOPS"]

reads_app = typer.Typer(help="Inspect runs.")

#: stop reasons that exit 1: the run did not end the way the user asked for
ABNORMAL_STOPS = frozenset({"failed", "approval_timeout"})
#: seconds between polls of ``status --watch``
WATCH_INTERVAL_S = 1.0


#: the workflow types ``ls`` lists and ``result`` reads (navigator explorations and research runs)
RUN_WORKFLOW_TYPES = (WORKFLOW_TYPE, "ResearchWorkflow", "InvestigationWorkflow", "ExploreBranchesWorkflow")
_RESULT_TYPES: dict[str, type] = {WORKFLOW_TYPE: ExplorationResult, "ResearchWorkflow": ResearchResult,
                                  "InvestigationWorkflow": InvestigationResult,
                                  "ExploreBranchesWorkflow": BranchExploreResult}


def exit_code_for_result(result: ExplorationResult | ResearchResult | InvestigationResult | BranchExploreResult) -> ExitCode:
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
    """Description + (while running) the ``get_status`` turn report."""
    handle, desc = await describe_run(session.client, workflow_id)
    row = run_row(desc)
    row["goal"] = await _memo_goal(desc)
    row["ui_url"] = session.ui_link(workflow_id)
    row["report"] = None
    if is_running(desc):
        report = await query_run(handle, QUERY_STATUS, TurnReport)
        row["report"] = report.model_dump(mode="json")
    return row


def _print_status(row: dict[str, Any]) -> None:
    stdout.print(f"[bold]{row['workflow_id']}[/bold] · {row['status']} · repo {row.get('repo') or '?'}")
    if row.get("goal"):
        stdout.print(f"goal: {row['goal']}", markup=False)
    if row["report"]:
        report = TurnReport.model_validate(row["report"])
        stdout.print(progress_line(report))
        if report.planning_fallback:
            stdout.print(f"planning fallback: {report.planning_fallback}", markup=False)
        if report.model_switches:
            stdout.print(f"model: {report.model} · routing switches:", markup=False)
            for line in report.model_switches:
                stdout.print(f"  {line}", markup=False, soft_wrap=True)
        if report.stage_plan:
            stdout.print(report.stage_plan, markup=False)
        if report.children:
            stdout.print(children_table(report.children))
    if row.get("ui_url"):
        stdout.print(f"Web UI: {row['ui_url']}", markup=False)


@reads_app.command()
@handles_errors
def status(
    ctx: typer.Context,
    workflow_id: WorkflowIdArg,
    watch: Annotated[bool, typer.Option("--watch", "-w", help="Follow until the run closes.")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Where a run is: Temporal status, step, cost, map tokens, focus."""
    run_async(_status(ctx, workflow_id, watch, json_out))


async def _status(ctx: typer.Context, workflow_id: str, watch: bool, json_out: bool) -> None:
    async with open_session(config_of(ctx)) as session:
        row = await fetch_status(session, workflow_id)
        if not watch:
            print_json(row) if json_out else _print_status(row)
            return
        if json_out:
            # one JSON object per line whenever something changes (ndjson)
            last = None
            while True:
                line = json.dumps(row, sort_keys=True, default=str)
                if line != last:
                    typer.echo(line)
                    last = line
                if row["status"] != "running":
                    return
                await asyncio.sleep(WATCH_INTERVAL_S)
                row = await fetch_status(session, workflow_id)
        await _watch_human(session, workflow_id, row)


async def _watch_human(session: TemporalSession, workflow_id: str, row: dict[str, Any]) -> None:
    """A live line on a terminal; one line per new step when piped."""
    live = Live(console=stdout, auto_refresh=False, transient=True) if stdout.is_terminal else None
    last_step = None
    try:
        while row["status"] == "running":
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


@reads_app.command()
@handles_errors
def log(ctx: typer.Context, workflow_id: WorkflowIdArg, json_out: JsonOpt = False) -> None:
    """The decision log of a run (needs a worker to answer the query)."""

    async def go() -> DecisionLogView:
        async with open_session(config_of(ctx)) as session:
            handle, _ = await describe_run(session.client, workflow_id)
            return await query_run(handle, QUERY_DECISION_LOG, DecisionLogView)

    view = run_async(go())
    entries = view.entries
    if json_out:
        print_json(view)
    elif not entries:
        stdout.print(f"{workflow_id}: no decisions yet")
    else:
        stdout.print(decision_table(entries))
    if view.children and not json_out:
        stdout.print(children_table(view.children))
    for note in view.notes if not json_out else []:
        stdout.print(f"  note: {note.kind} from {note.sender} (turn {note.turn}): {note.note}", markup=False)


@reads_app.command()
@handles_errors
def result(
    ctx: typer.Context,
    workflow_id: WorkflowIdArg,
    wait: Annotated[bool, typer.Option("--wait", help="Wait for a running run to finish.")] = False,
    json_out: JsonOpt = False,
) -> None:
    """The result of a finished run: stop reason, cost, context-pack path."""

    async def go() -> tuple[ExplorationResult | ResearchResult | InvestigationResult | BranchExploreResult, str | None]:
        async with open_session(config_of(ctx)) as session:
            _, desc = await describe_run(session.client, workflow_id)
            result_type = _RESULT_TYPES.get(desc.workflow_type or "")
            if result_type is None:
                raise CliError(f"run {workflow_id} is a {desc.workflow_type}, not an exploration, research run or investigation; "
                               "see `navigator batch` for batches")
            handle = session.client.get_workflow_handle(workflow_id, result_type=result_type)
            if is_running(desc) and not wait:
                raise CliError(f"run {workflow_id} is still running; pass --wait or check `navigator status`")
            try:
                res = await handle.result()
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
        stdout.print(research_panel(res, link))
    elif isinstance(res, InvestigationResult):
        stdout.print(investigation_panel(res, link))
    elif isinstance(res, BranchExploreResult):
        stdout.print(f"kept {res.kept or 'no branch'}: {res.context_path or '(no context pack)'} · "
                     f"{len(res.scores)} branches · ${res.cost_usd:.4f}", markup=False)
    else:
        stdout.print(result_panel(res, link))
    raise typer.Exit(int(exit_code_for_result(res)))


def build_list_query(status_filter: str | None, repo: str | None) -> str:
    """The visibility query of ``ls`` (search attributes registered by the dev server)."""
    types = ", ".join(f"'{t}'" for t in RUN_WORKFLOW_TYPES)
    clauses = [f"WorkflowType IN ({types})"]
    if status_filter:
        clauses.append(f"NavigatorStatus = '{_quote(status_filter)}'")
    if repo:
        clauses.append(f"NavigatorRepo = '{_quote(repo)}'")
    return " AND ".join(clauses)


def _quote(value: str) -> str:
    return value.replace("\\", "\\\\").replace("'", "\\'")


@reads_app.command("ls")
@handles_errors
def list_runs(
    ctx: typer.Context,
    status_filter: Annotated[
        str | None,
        typer.Option("--status", help=f"Navigator status: {', '.join(s.value for s in Status)}."),
    ] = None,
    repo: Annotated[
        str | None, typer.Option("--repo", help="Repository as recorded by the run (NavigatorRepo).")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, max=1000, help="At most this many runs.")] = 20,
    json_out: JsonOpt = False,
) -> None:
    """List navigator explorations and research runs, newest first, filtered through search attributes."""
    if status_filter and status_filter not in {s.value for s in Status}:
        raise CliError(f"--status must be one of {', '.join(s.value for s in Status)}, got {status_filter!r}")
    if repo and Path(repo).expanduser().is_dir():
        # runs record the absolute, resolved repository path
        repo = str(Path(repo).expanduser().resolve())
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
    else:
        stdout.print(runs_table(rows))


@reads_app.command()
@handles_errors
def ui(ctx: typer.Context, workflow_id: WorkflowIdArg, json_out: JsonOpt = False) -> None:
    """Print the Web UI link of a run (no server call needed)."""
    config = config_of(ctx)
    base = ui_base_for(config)
    if base is None:
        raise CliError("the Web UI address of this server is unknown; set TEMPORAL_UI_URL or temporal.ui_url")
    url = workflow_ui_url(base, config.temporal.namespace, workflow_id)
    print_json({"workflow_id": workflow_id, "url": url}) if json_out else typer.echo(url)

