"""The signatures and help of the steering, read, map, worker and mcp commands (stdlib + typer only).

``navigator status --help`` (and every other command here) imports this module and
nothing heavy: each command's body imports its own module (``cli.reads``, ``cli.status_cmd``,
``cli.signals``, ``cli.mapcmd``, ``cli.serve``, ``cli.mcpserver.command``: the Temporal
client, navcore models, rich) and runs ``run_<command>`` there with the same
arguments. The option types and constants they share are in :mod:`cli.options`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from durable_navigator.cli.lazy import command_group
from durable_navigator.cli.options import (
    DEFAULT_PORT,
    reason_option,
    EXECUTION_STATUSES,
    NAVIGATOR_STATUSES,
    JsonOpt,
    PlanOpt,
    SenderOpt,
    TurnOpt,
    WorkflowIdArg,
    refuse,
)
from durable_navigator.navtypes.runmodes import ExecutionMode

reads_app = command_group(help="Inspect runs.")
signals_app = command_group(help="Steer a running exploration.")
map_app = command_group(help="The repo map on its own.")
worker_app = command_group(help="Run navigator workers.")
mcp_app = command_group(help="Serve coding agents over the Model Context Protocol.")


@reads_app.command()
def status(
    ctx: typer.Context,
    workflow_id: WorkflowIdArg,
    watch: Annotated[bool, typer.Option("--watch", "-w", help="Follow until the run closes.", show_default="off")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Where a run is, and the change awaiting a verdict.

    Temporal status, step, cost (of the last turn and in total), map tokens, focus, the
    model's reasoning in full and the proposed flight-plan change — what a remote
    approver needs before `navigator approve` / `reject`. A finished run shows its result.
    """
    from durable_navigator.cli.status_cmd import run_status

    run_status(ctx=ctx, workflow_id=workflow_id, watch=watch, json_out=json_out)


@reads_app.command()
def log(ctx: typer.Context, workflow_id: WorkflowIdArg, json_out: JsonOpt = False) -> None:
    """The decision log of a run.

    Each decision: step, action, verdict, cost, map tokens before → after, the change
    and the reasoning. A running run answers a query (a worker must be up); a finished
    one is read from its report.json when this machine sees it, else queried.
    """
    from durable_navigator.cli.reads import run_log

    run_log(ctx=ctx, workflow_id=workflow_id, json_out=json_out)


@reads_app.command()
def result(
    ctx: typer.Context,
    workflow_id: WorkflowIdArg,
    wait: Annotated[bool, typer.Option("--wait", help="Wait for a running run to finish.", show_default="off")] = False,
    out: Annotated[Path | None, typer.Option(
        "--out", metavar="DIR", show_default="the folder the run was started with",
        help="Write the run's files into DIR/<workflow id>/ on this machine.")] = None,
    json_out: JsonOpt = False,
) -> None:
    """The result of a run: stop reason, cost, context pack.

    Also the paths of context.md and report.json and the run's Web UI link. Files missing on
    this machine are written from the artifact store.
    """
    from durable_navigator.cli.reads import run_result

    run_result(ctx=ctx, workflow_id=workflow_id, wait=wait, json_out=json_out, out=out)


@reads_app.command("ls")
def list_runs(
    ctx: typer.Context,
    status_filter: Annotated[
        str | None,
        typer.Option("--status", metavar="STATUS", show_default="all runs",
                     help=f"Temporal status ({', '.join(EXECUTION_STATUSES)}) or navigator status "
                     f"({', '.join(NAVIGATOR_STATUSES)})."),
    ] = None,
    repo: Annotated[
        str | None, typer.Option("--repo", metavar="PATH", help="Repository as recorded by the run (NavigatorRepo).",
                                 show_default="every repository")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", metavar="N", min=1, max=1000, help="At most this many runs.")] = 20,
    json_out: JsonOpt = False,
) -> None:
    """List runs, newest first.

    Explorations, research runs and investigations, filtered by Temporal or navigator status and repository (search attributes).
    """
    from durable_navigator.cli.reads import run_list_runs

    run_list_runs(ctx=ctx, status_filter=status_filter, repo=repo, limit=limit, json_out=json_out)


@reads_app.command()
def ui(ctx: typer.Context, workflow_id: WorkflowIdArg, json_out: JsonOpt = False) -> None:
    """Print the Web UI link of a run.

    No server call: the link comes from TEMPORAL_UI_URL, the navigator server of this
    user serving the configured database (whatever its --ui-port), or the configured
    embedded UI port.
    """
    from durable_navigator.cli.reads import run_ui

    run_ui(ctx=ctx, workflow_id=workflow_id, json_out=json_out)


@signals_app.command()
def approve(
    ctx: typer.Context,
    workflow_id: WorkflowIdArg,
    turn: TurnOpt = None,
    plan: PlanOpt = False,
    edit: Annotated[
        Path | None,
        typer.Option("--edit", metavar="FILE", help="Investigations: approve this edited stage plan (YAML; "
                     "implies --plan).", show_default="the plan as proposed"),
    ] = None,
    sender: SenderOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Approve the turn (or stage plan) awaiting a verdict.

    Exit code 2 when the run refuses it (that turn is not awaiting a verdict, or
    was already answered); `navigator status ID` shows what is pending. With
    --edit FILE an investigation's stage plan is replaced by the file's stages
    (titles, tasks, criteria, max_loops, branches, profile) and then approved; a
    bad plan is refused with the field it names, and the run keeps waiting.
    """
    from durable_navigator.cli.signals import run_approve

    run_approve(ctx=ctx, workflow_id=workflow_id, turn=turn, plan=plan, edit=edit, sender=sender, json_out=json_out)


@signals_app.command()
def reject(
    ctx: typer.Context,
    workflow_id: WorkflowIdArg,
    feedback: Annotated[
        str, typer.Option("--feedback", "-f", metavar="TEXT", help="What to do instead; the model sees it next turn.",
                          show_default="none")
    ] = "",
    turn: TurnOpt = None,
    plan: PlanOpt = False,
    sender: SenderOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Reject the turn (or stage plan), with feedback.

    The proposed change is undone; the model sees the feedback next turn. Exit code 2
    when the run refuses the verdict (see `approve`).
    """
    from durable_navigator.cli.signals import run_reject

    run_reject(ctx=ctx, workflow_id=workflow_id, feedback=feedback, turn=turn, plan=plan, sender=sender, json_out=json_out)


@signals_app.command()
def stop(
    ctx: typer.Context,
    workflow_id: WorkflowIdArg,
    reason: Annotated[str, reason_option("Recorded in the report.")] = "stopped by user",
    sender: SenderOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Finalize a run now with the best map so far.

    Not a cancel: the run writes its context pack and report as usual (stop reason
    `stopped`); a model call in flight is cancelled.
    """
    from durable_navigator.cli.signals import run_stop

    run_stop(ctx=ctx, workflow_id=workflow_id, reason=reason, sender=sender, json_out=json_out)


def checked_mode(value: str | None) -> ExecutionMode | None:
    """MODE as an :class:`ExecutionMode`, or the one-line refusal.

    Not a click choice: its errors list the choices one per line, and a bad value came inside
    click's usage frame.
    """
    if value is None:
        return None
    modes = [m.value for m in ExecutionMode]
    if value.strip().lower() not in modes:
        refuse(f"MODE {value[:40]!r} is not a mode; use {' or '.join(modes)}, e.g. navigator mode WORKFLOW_ID "
               f"{modes[-1]}")
    return ExecutionMode(value.strip().lower())


@signals_app.command()
def mode(
    ctx: typer.Context,
    workflow_id: WorkflowIdArg,
    new_mode: Annotated[str, typer.Argument(metavar="MODE", help="interactive or autonomous.", show_default=False,
                                            callback=checked_mode)],
    sender: SenderOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Switch a run between interactive and autonomous."""
    from durable_navigator.cli.signals import run_mode

    run_mode(ctx=ctx, workflow_id=workflow_id, new_mode=ExecutionMode(new_mode), sender=sender, json_out=json_out)


@signals_app.command()
def budget(
    ctx: typer.Context,
    workflow_id: WorkflowIdArg,
    add_usd: Annotated[str, typer.Argument(metavar="ADD_USD", help="USD to add to the run's limit, e.g. 0.25.")],
    sender: SenderOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Add USD to a run's budget.

    Also resumes an interactive run parked on budget exhaustion.
    """
    from durable_navigator.cli.signals import run_budget

    run_budget(ctx=ctx, workflow_id=workflow_id, add_usd=add_usd, sender=sender, json_out=json_out)


@map_app.command("map")
def map_command(
    ctx: typer.Context,
    repo: Annotated[Path, typer.Argument(metavar="REPO", help="Repository to map.", show_default=False)],
    goal: Annotated[
        str | None, typer.Option("--goal", metavar="TEXT", help="Rank the map for this goal.", show_default="none: structure only")
    ] = None,
    plan: Annotated[
        Path | None,
        typer.Option("--plan", metavar="FILE", help="Flight-plan YAML (rules, focus, excludes; `repo-map schema` prints its schema).",
                     show_default="the coarse plan explore starts from"),
    ] = None,
    tokens: Annotated[
        int | None,
        typer.Option("--tokens", metavar="N", help="Token budget of the map.",
                     show_default="the plan's, else defaults.token_budget in navigator.yaml: 8192"),
    ] = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the map and its metadata as JSON.", show_default="off")
    ] = False,
) -> None:
    """Print the repo map of REPO (what the navigator sees)."""
    from durable_navigator.cli.mapcmd import run_map_command

    run_map_command(ctx=ctx, repo=repo, goal=goal, plan=plan, tokens=tokens, json_out=json_out)


@worker_app.command()
def worker(
    ctx: typer.Context,
    max_concurrent_activities: Annotated[
        int | None,
        typer.Option("--max-concurrent-activities", min=1, metavar="N", help="Activity slots.",
                     show_default="worker.max_concurrent_activities in navigator.yaml: 8"),
    ] = None,
    health_port: Annotated[
        int | None,
        typer.Option("--health-port", min=1, max=65535, metavar="PORT", help="Serve /healthz and /readyz on this port.",
                     envvar="NAVIGATOR_HEALTH_PORT", show_default="no health endpoint"),
    ] = None,
    health_host: Annotated[
        str, typer.Option("--health-host", metavar="HOST", help="Bind address of the health port.")
    ] = "0.0.0.0",
) -> None:
    """Run a navigator worker until SIGTERM / Ctrl-C.

    It serves the task queue of the configured server (or the navigator server of this
    user found for the configured database); on SIGTERM it stops polling, lets running
    tasks finish and leaves.
    """
    from durable_navigator.cli.serve import run_worker

    run_worker(ctx=ctx, max_concurrent_activities=max_concurrent_activities, health_port=health_port, health_host=health_host)


@mcp_app.command("mcp")
def mcp_command(
    ctx: typer.Context,
    http: Annotated[bool, typer.Option("--http", help="Serve streamable HTTP instead of stdio.", show_default="stdio")] = False,
    host: Annotated[str, typer.Option("--host", help="HTTP: address to bind (loopback unless you mean it).")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="HTTP: port (0 picks a free one).")] = DEFAULT_PORT,
    allow_root: Annotated[
        list[Path] | None,
        typer.Option("--allow-root", help="Only repositories under DIR may be explored (repeatable).",
                     show_default="any directory this process can read"),
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Where runs write context.md + report.json (default: the user "
                                  "state dir's mcp-runs/).")
    ] = None,
) -> None:
    """Serve coding agents over MCP (explore, ask, runs).

    Tools: explore, ask, run_status, stop_run, list_runs; resources: a run's context, answer and report.
    """
    from durable_navigator.cli.mcpserver.command import run_mcp_command

    run_mcp_command(ctx=ctx, http=http, host=host, port=port, allow_root=allow_root, out=out)
