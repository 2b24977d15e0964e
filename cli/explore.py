"""``navigator explore REPO GOAL``: start an exploration and follow it to its context pack.

The command only: the request is built and checked by :mod:`cli.runrequest` (shared with ``ask``,
``investigate``, batches and the MCP server), started and followed by :mod:`cli.launch`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from temporalio.client import WorkflowHandle

from durable_navigator.cli.branches import explore_branches
from durable_navigator.cli.common import config_of, run_async, stdout
from durable_navigator.cli.config import NavigatorConfig
from durable_navigator.cli.connect import TemporalSession
from durable_navigator.cli.display import plan_text, print_block, result_panel
from durable_navigator.cli.errors import CliError, ExitCode, handles_errors, stderr
from durable_navigator.cli.handles import query_run
from durable_navigator.cli.launch import launch, request_settings, start_run
from durable_navigator.cli.runrequest import build_request, check_models, new_run_id
from durable_navigator.cli.sources import settled_source
from durable_navigator.navcore.navigator.messages import QUERY_STATUS
from durable_navigator.navcore.navigator.report import TurnReport
from durable_navigator.navcore.navigator.requests import ExplorationRequest, ExplorationResult
from durable_navigator.navcore.run_kinds import EXPLORE
from durable_navigator.navcore.navigator.state import ExecutionMode

__all__ = ["run_explore"]

# the command's signature and help: cli/run_commands.py (``navigator explore --help`` imports only that)


@handles_errors
def run_explore(
    ctx: typer.Context,
    repo: str,
    goal: str,
    interactive: bool,
    budget_usd: str | None,
    tokens: int | None,
    model: str | None,
    max_iterations: int | None,
    out: Path | None,
    detach: bool,
    profile: Path | None,
    planning: str,
    review: bool,
    workflow_id: str | None,
    json_out: bool,
    branches: int,
    ref: str | None = None,
    source: str = "auto",
) -> None:
    """The ``navigator explore`` command (its options and help: :mod:`cli.run_commands`)."""
    config = config_of(ctx)
    request = build_request(
        repo, goal, config=config, interactive=interactive, budget_usd=budget_usd, tokens=tokens,
        model=model, max_iterations=max_iterations, out=out, profile=profile,
        planning=planning, review=review, ref=ref,
    )  # fmt: skip
    # the run's model and the ones its profile's routing rules name
    check_models(request.models(), config, local_worker=config.temporal.address is None and not detach)
    wid = workflow_id or new_run_id(EXPLORE, Path(request.repo_path))
    if branches > 1:
        if interactive:
            raise CliError("--branches runs its explorations autonomously; drop --interactive or --branches")
        code = run_async(explore_branches(config, request, branches, wid, request_settings(request), detach=detach,
                                          json_out=json_out, source=source))
        raise typer.Exit(int(code))
    code = run_async(_explore(config, request, wid, detach=detach, json_out=json_out, source=source))
    raise typer.Exit(int(code))


async def _explore(
    config: NavigatorConfig, request: ExplorationRequest, wid: str, *, detach: bool, json_out: bool, source: str
) -> ExitCode:
    async def start(session: TemporalSession) -> WorkflowHandle:
        # after the workers' refusals, before the start: a snapshot is uploaded only for a run that starts
        sourced = await settled_source(config, request, source)
        return await start_run(session, EXPLORE, sourced, wid, text=request.goal, repo=sourced.repo_path,
                               model=request.model, verb="explore", settings=request_settings(request))

    async def show(result: ExplorationResult, link: str | None, handle: WorkflowHandle[Any, Any]) -> None:
        await _print_stage_plan(handle)
        print_block(stdout, result_panel(result))
        if result.context_path:
            stdout.print(f"context written to {result.context_path}", markup=False, soft_wrap=True)
        if link:
            stdout.print(f"Web UI: {link}", markup=False, soft_wrap=True)

    return await launch(config, request.models(), interactive=request.mode == ExecutionMode.INTERACTIVE,
                        detach=detach, json_out=json_out, what=f"{request.model}, {request.mode.value}",
                        start=start, show=show)


async def _print_stage_plan(handle: WorkflowHandle) -> None:
    """The final stage plan with each criterion's status (also in context.md), when the run had one."""
    try:
        report = await query_run(handle, QUERY_STATUS, TurnReport)
    except CliError as exc:
        # display only: the plan is in context.md either way; say why it is not shown here
        stderr.print(f"(stage plan not shown: {exc}; see context.md)", markup=False)
        return
    if report.stage_plan:
        stdout.print(plan_text(report.stage_plan, current=False), markup=False, soft_wrap=True)
