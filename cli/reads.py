"""Read commands: ``status``, ``log``, ``result``, ``ls``, ``ui`` (all with ``--json``).

``status`` lives in :mod:`cli.status_cmd`; what the read commands share (a run as a row, result
types, exit codes, the ``ls`` query) in :mod:`cli.runrows`. Both are re-exported here: their import
path has been ``cli.reads``.
"""

from __future__ import annotations

import json
from pathlib import Path

import typer
from pydantic import ValidationError
from temporalio.client import WorkflowFailureError
from temporalio.service import RPCError

from durable_navigator.cli.common import config_of, print_json, run_async, stdout
from durable_navigator.cli.connect import open_session, ui_base_for
from durable_navigator.cli.display import (
    WIDE_COLUMNS,
    RunRow,
    children_blocks,
    decision_lines,
    print_block,
    print_lines,
    result_paths,
    run_result_panel,
    runs_blocks,
    runs_table,
)
from durable_navigator.cli.errors import CliError, RunFailedError, handles_errors
from durable_navigator.cli.handles import describe_run, is_running, query_run, status_name
from durable_navigator.cli.results_home import bring_run_home
from durable_navigator.cli.runrows import (
    ABNORMAL_STOPS,
    RUN_WORKFLOW_TYPES,
    STATUS_CHOICES,
    build_list_query,
    exit_code_for_result,
    memo_goal,
    run_row,
)
from durable_navigator.cli.status_cmd import WATCH_INTERVAL_S, fetch_status, run_status
from durable_navigator.cli.stores import open_artifact_store
from durable_navigator.cli.stuck import result_unless_stuck
from durable_navigator.navcore.batch.branches import BranchExploreResult
from durable_navigator.navcore.investigation.investigation import InvestigationResult
from durable_navigator.navcore.navigator.messages import QUERY_DECISION_LOG, QUERY_STATUS
from durable_navigator.navcore.navigator.report import DecisionLogView, TurnReport
from durable_navigator.navcore.navigator.requests import ExplorationResult
from durable_navigator.navcore.research.research import ResearchResult
from durable_navigator.navcore.run_kinds import BRANCHES, RunKind, run_kind_of
from durable_navigator.repomap.fsnames import is_utf8
from durable_navigator.workers.devserver import workflow_ui_url

__all__ = ["run_row", "fetch_status", "exit_code_for_result", "build_list_query", "ABNORMAL_STOPS",
           "STATUS_CHOICES", "RUN_WORKFLOW_TYPES", "WATCH_INTERVAL_S", "run_status", "run_log", "run_result",
           "run_list_runs", "run_ui"]

# reads_app and its commands' signatures and help: cli/signatures.py



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
            kind = run_kind_of(desc.workflow_type)
            result_type = kind.result_type if kind is not None else None
            handle = session.client.get_workflow_handle(workflow_id, result_type=result_type)
            completed = not is_running(desc) and status_name(desc.status) == "completed"
            if desc.workflow_type == BRANCHES.workflow_type:
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
    out: Path | None = None,
) -> None:
    """The ``navigator result`` command (its options and help: :mod:`cli.signatures`).

    The run's files are written on this machine from the artifact store (:mod:`cli.results_home`)."""
    config = config_of(ctx)
    store = open_artifact_store(config)  # a bad artifacts: setting is one line before anything is read

    async def go() -> tuple[RunKind, ExplorationResult | ResearchResult | InvestigationResult | BranchExploreResult,
                            str | None]:
        async with open_session(config) as session:
            _, desc = await describe_run(session.client, workflow_id)
            kind = run_kind_of(desc.workflow_type)
            if kind is None:
                raise CliError(f"run {workflow_id} is a {desc.workflow_type}, not an exploration, research run or "
                               "investigation; see `navigator batch` for batches")
            handle = session.client.get_workflow_handle(workflow_id, result_type=kind.result_type)
            if is_running(desc) and not wait:
                raise CliError(f"run {workflow_id} is still running; pass --wait or check `navigator status`")
            try:
                res = await result_unless_stuck(session.client, handle)
            except WorkflowFailureError as exc:
                cause = getattr(exc.cause, "message", None) or str(exc.cause or exc)
                raise RunFailedError(f"run {workflow_id} failed: {cause}") from None
            except RPCError as exc:
                raise RunFailedError(f"cannot read the result of {workflow_id}: {exc.message}") from None
            res = await bring_run_home(session.client, store, res, out)
            return kind, res, session.ui_link(workflow_id)

    kind, res, link = run_async(go())
    if json_out:
        print_json({**res.model_dump(mode="json"), "ui_url": link})
    else:
        print_block(stdout, run_result_panel(kind, res))
        for line in result_paths(res) + ([f"Web UI: {link}"] if link else []):
            stdout.print(line, markup=False, soft_wrap=True)
    raise typer.Exit(int(exit_code_for_result(res)))


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
    if repo is not None and not is_utf8(repo):
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
                    row["goal"] = await memo_goal(entry)
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
