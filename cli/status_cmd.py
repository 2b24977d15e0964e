"""``navigator status``: one run's state — its turn report while it runs, its result or error after.

``--watch`` follows it (a live line on a terminal, one line per step when piped; ``--json`` prints one
object per line whenever something changes).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import typer
from rich.live import Live

from durable_navigator.cli.common import config_of, print_json, run_async, stdout
from durable_navigator.cli.connect import TemporalSession, open_session
from durable_navigator.cli.display import (
    children_blocks,
    last_turn_block,
    plan_text,
    print_block,
    progress_line,
    run_result_panel,
    turn_panel,
)
from durable_navigator.cli.errors import ExitCode, handles_errors, stderr
from durable_navigator.cli.handles import describe_run, is_running, query_run, with_full_reasoning
from durable_navigator.cli.runrows import RESULT_TYPES, memo_goal, run_row
from durable_navigator.cli.stuck import closed_error, stuck_message, stuck_reason
from durable_navigator.navcore.batch.batch import BatchProgress
from durable_navigator.navcore.navigator.messages import BATCH_WORKFLOW, QUERY_BATCH_PROGRESS, QUERY_STATUS
from durable_navigator.navcore.navigator.report import TurnReport
from durable_navigator.navcore.run_kinds import INVESTIGATION, RESEARCH, run_kind_of

__all__ = ["fetch_status", "run_status", "WATCH_INTERVAL_S"]

#: seconds between polls of ``status --watch``
WATCH_INTERVAL_S = 1.0
#: workflows whose turns are steps of a stage plan (their plan is shown inside the verdict panel)
_STAGED = (RESEARCH.report_name, INVESTIGATION.report_name)


async def fetch_status(session: TemporalSession, workflow_id: str) -> dict[str, Any]:
    """Description + the ``get_status`` turn report (running) or the result (finished).

    ``report`` holds the turn report a running run answers: step, cost of the turn and in
    total, the model's reasoning and the proposed change (``awaiting_turn`` set while a
    human is asked). A closed run answers no query without a worker; ``result`` then holds
    its result, read from history.
    """
    _, desc = await describe_run(session.client, workflow_id)
    handle = session.client.get_workflow_handle(workflow_id, result_type=RESULT_TYPES.get(desc.workflow_type or ""))
    row = run_row(desc)
    row["goal"] = await memo_goal(desc)
    row["ui_url"] = session.ui_link(workflow_id)
    row["report"] = None
    row["result"] = None
    row["error"] = None
    row["batch"] = None
    if is_running(desc):
        stuck = await stuck_reason(session.client, workflow_id)
        if stuck is not None:
            row["error"] = stuck_message(workflow_id, stuck)  # it answers no query: say why instead
            return row
        if desc.workflow_type == BATCH_WORKFLOW:
            # a batch answers `get_progress`, not an exploration's turn report (asking for that one failed
            # the command, exit 2, whenever it caught a batch still running)
            row["batch"] = (await query_run(handle, QUERY_BATCH_PROGRESS, BatchProgress)).model_dump(mode="json")
            return row
        report = await query_run(handle, QUERY_STATUS, TurnReport)
        row["report"] = with_full_reasoning(report, session.artifact_store()).model_dump(mode="json")
    elif row["status"] == "completed" and desc.workflow_type in RESULT_TYPES:
        row["result"] = (await handle.result()).model_dump(mode="json")
    elif row["status"] != "completed":
        row["error"] = await closed_error(handle)
    return row


def _print_status(row: dict[str, Any]) -> None:
    kind = run_kind_of(row.get("workflow_type"))
    stdout.print(f"[bold]{row['workflow_id']}[/bold] · {row['status']} · repo {row.get('repo') or '?'}")
    if row.get("goal"):
        label = kind.text_label if kind is not None else "goal"
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
                plan = "research plan" if report.workflow == RESEARCH.report_name else "stage plan"
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
    if row.get("result") and kind is not None:
        print_block(stdout, run_result_panel(kind, row["result"]))
    if row.get("workflow_type") == BATCH_WORKFLOW:
        _print_batch(row)
    if row.get("ui_url"):
        stdout.print(f"Web UI: {row['ui_url']}", markup=False, soft_wrap=True)
    if row.get("error"):
        stderr.print(f"Error: {row['error']}", markup=False, soft_wrap=True)


def _print_batch(row: dict[str, Any]) -> None:
    """A batch's counts while it runs, and where its jobs are read."""
    if row.get("batch"):
        p = BatchProgress.model_validate(row["batch"])
        stdout.print(f"{p.jobs_total} jobs · pending {p.pending} · running {p.running} · completed {p.completed} · "
                     f"failed {p.failed} · skipped {p.skipped} · spent ${p.spent_usd:.4f} of ${p.total_usd:.4f}"
                     + (f" · stop requested: {p.stop_requested}" if p.stop_requested else ""),
                     markup=False, soft_wrap=True)
    wid = row["workflow_id"]
    stdout.print(f"a batch: `navigator batch results {wid}` lists its jobs, `navigator batch stop {wid}` ends it",
                 markup=False, soft_wrap=True)


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
