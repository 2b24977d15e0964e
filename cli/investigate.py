"""``navigator investigate REPO GOAL``: a staged investigation (plan → stages on subagents → report.md).

Prints ``report.md`` above the run's panel when this machine can read it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from temporalio.client import WorkflowHandle

from durable_navigator.cli.common import config_of, run_async, stdout
from durable_navigator.cli.config import NavigatorConfig
from durable_navigator.cli.connect import TemporalSession
from durable_navigator.cli.display import investigation_panel, print_block
from durable_navigator.cli.errors import ExitCode, handles_errors
from durable_navigator.cli.launch import launch, start_run
from durable_navigator.cli.runrequest import build_investigation_request, check_models, new_run_id
from durable_navigator.cli.sources import settled_source
from durable_navigator.navcore.investigation.investigation import InvestigationRequest, InvestigationResult
from durable_navigator.navcore.run_kinds import INVESTIGATION
from durable_navigator.navcore.navigator.state import ExecutionMode

__all__ = ["run_investigate"]

# the command's signature and help: cli/run_commands.py (``navigator investigate --help`` imports only that)


@handles_errors
def run_investigate(
    ctx: typer.Context,
    repo: str,
    goal: str,
    interactive: bool,
    budget_usd: str | None,
    model: str | None,
    max_stages: int,
    branches: int,
    worker: str | None,
    profiles_file: Path | None,
    out: Path | None,
    detach: bool,
    workflow_id: str | None,
    json_out: bool,
    ref: str | None = None,
    source: str = "auto",
) -> None:
    """The ``navigator investigate`` command (its options and help: :mod:`cli.run_commands`)."""
    config = config_of(ctx)
    request = build_investigation_request(repo, goal, config=config, interactive=interactive, budget_usd=budget_usd,
                                          model=model, out=out, max_stages=max_stages, branches=branches,
                                          worker=worker, profiles_file=profiles_file, ref=ref)
    models = sorted({request.model, *(p.model for p in [request.worker, *request.profiles.values()] if p.model)})
    check_models(models, config, local_worker=config.temporal.address is None and not detach)
    wid = workflow_id or new_run_id(INVESTIGATION, Path(request.repo_path))
    code = run_async(_investigate(config, request, wid, models, detach=detach, json_out=json_out, source=source))
    raise typer.Exit(int(code))


async def _investigate(config: NavigatorConfig, request: InvestigationRequest, wid: str, models: list[str], *,
                       detach: bool, json_out: bool, source: str = "auto") -> ExitCode:
    async def start(session: TemporalSession) -> WorkflowHandle:
        # after the workers' refusals, before the start: a snapshot is uploaded only for a run that starts
        sourced = await settled_source(config, request, source)
        return await start_run(session, INVESTIGATION, sourced, wid, text=request.goal, repo=sourced.repo_path,
                               model=request.model, verb="investigate", settings={
                                   "Model": request.model,
                                   "Mode": request.mode.value,
                                   "Budget": f"${request.budget_usd:.4f}",
                                   "Worker profile": request.worker.name,
                                   "Stages": f"at most {request.max_stages}",
                                   "Branches": str(request.branches),
                                   "Output": f"{request.out_dir}/<workflow id>/report.md",
                               })

    async def show(result: InvestigationResult, link: str | None, handle: WorkflowHandle[Any, Any]) -> None:
        report = Path(result.report_path) if result.report_path else None
        if report is not None and report.is_file():
            stdout.print(report.read_text(encoding="utf-8"), markup=False, soft_wrap=True)
        print_block(stdout, investigation_panel(result))
        if result.report_path:
            stdout.print(f"report written to {result.report_path} (+ {result.report_json_path})", markup=False,
                         soft_wrap=True)
        if link:
            stdout.print(f"Web UI: {link}", markup=False, soft_wrap=True)

    return await launch(config, models, interactive=request.mode == ExecutionMode.INTERACTIVE, detach=detach,
                        json_out=json_out, what=f"investigation, {request.model}, {request.mode.value}", start=start,
                        show=show)
