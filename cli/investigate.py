"""``navigator investigate REPO GOAL``: a staged investigation (plan → stages on subagents → report.md)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import typer
from temporalio.client import WorkflowHandle
from temporalio.exceptions import WorkflowAlreadyStartedError

from durable_navigator.cli.common import cancel_and_wait, config_of, print_json, run_async, stdout
from durable_navigator.cli.config import NavigatorConfig
from durable_navigator.cli.connect import TemporalSession, announce_started, open_session, print_started_id
from durable_navigator.cli.display import investigation_panel, print_block
from durable_navigator.cli.errors import CliError, ExitCode, handles_errors
from durable_navigator.cli.explore import (
    new_workflow_id,
    refuse_unservable,
    say_after,
    say_server,
    validate_model,
)
from durable_navigator.cli.follow import follow_to_result
from durable_navigator.cli.preflight import IN_PROCESS, problems_here, refuse_unservable_on_workers
from durable_navigator.cli.reads import exit_code_for_result
from durable_navigator.cli.runinput import budget_or_default, check_repository, check_text, validated
from durable_navigator.navcore.investigation import WORKER_PROFILE, InvestigationRequest, InvestigationResult
from durable_navigator.navcore.report import run_details_markdown, run_summary
from durable_navigator.navcore.requests import ApprovalConfig
from durable_navigator.navcore.state import ExecutionMode
from durable_navigator.navtypes.errors import ConfigError

__all__ = ["run_investigate", "build_investigation_request", "INVESTIGATION_WORKFLOW_TYPE", "new_investigation_id"]

# the command's signature and help: cli/run_commands.py (``navigator investigate --help`` imports only that)

#: the investigation workflow's registered type name (public API)
INVESTIGATION_WORKFLOW_TYPE = "InvestigationWorkflow"


def new_investigation_id(repo: Path) -> str:
    """A fresh, readable workflow id for an investigation of ``repo``."""
    return "inv-" + new_workflow_id(repo).removeprefix("nav-")


def build_investigation_request(
    repo: Path, goal: str, *, config: NavigatorConfig, interactive: bool, budget_usd: str | None, model: str | None,
    out: Path | None, max_stages: int = 4, branches: int = 1, worker: str | None = None,
    profiles_file: Path | None = None,
) -> InvestigationRequest:
    """Validate the inputs and build the workflow input (no credentials in it, ever)."""
    from durable_navigator.activities.profiles import load_agent_profiles

    root = check_repository(repo)
    goal = check_text(goal, "GOAL", '"audit authorization; list gaps"')
    budget = budget_or_default(budget_usd, config.defaults.budget_usd, config.source)
    if profiles_file is not None and not profiles_file.is_file():
        raise CliError(f"--profiles {profiles_file} does not exist; pass an agent-profiles YAML file")
    profiles = {n: p for n, p in load_agent_profiles(profiles_file).items() if p.kind == "research"}
    own = WORKER_PROFILE
    if worker is not None:
        if worker not in profiles:
            raise ConfigError(f"--worker {worker!r} is not a research profile; use one of {', '.join(sorted(profiles))}")
        own = profiles[worker]
    return validated(
        InvestigationRequest,
        repo_path=str(root), goal=goal,
        mode=ExecutionMode.INTERACTIVE if interactive else ExecutionMode.AUTONOMOUS, budget_usd=budget,
        model=(model or config.model).strip(), out_dir=str((out or config.defaults.out_dir).expanduser().resolve()),
        approval=ApprovalConfig(timeout_s=config.defaults.approval_timeout_s), worker=own, profiles=profiles,
        max_stages=max_stages, branches=branches,
    )


@handles_errors
def run_investigate(
    ctx: typer.Context,
    repo: Path,
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
) -> None:
    """The ``navigator investigate`` command (its options and help: :mod:`cli.run_commands`)."""
    config = config_of(ctx)
    request = build_investigation_request(repo, goal, config=config, interactive=interactive, budget_usd=budget_usd,
                                          model=model, out=out, max_stages=max_stages, branches=branches,
                                          worker=worker, profiles_file=profiles_file)
    local_worker = config.temporal.address is None and not detach
    models = sorted({request.model, *(p.model for p in [request.worker, *request.profiles.values()] if p.model)})
    for name in models:
        validate_model(name, config, local_worker)
    if local_worker:
        problems = problems_here(models, config)  # the configured endpoints count, as for explore
        for name in models:
            refuse_unservable(name, problems, IN_PROCESS)
    wid = workflow_id or new_investigation_id(Path(request.repo_path))
    code = run_async(_investigate(config, request, wid, models, detach=detach, json_out=json_out))
    raise typer.Exit(int(code))


async def _start(session: TemporalSession, request: InvestigationRequest, wid: str) -> WorkflowHandle:
    try:
        return await session.client.start_workflow(
            INVESTIGATION_WORKFLOW_TYPE, request, id=wid, task_queue=session.task_queue,
            result_type=InvestigationResult,
            memo={"goal": request.goal, "repo": request.repo_path, "kind": "investigation"},
            static_summary=run_summary(request.goal, request.repo_path, request.model, verb="investigate"),
            static_details=run_details_markdown(request.goal, request.repo_path, {
                "Model": request.model,
                "Mode": request.mode.value,
                "Budget": f"${request.budget_usd:.4f}",
                "Worker profile": request.worker.name,
                "Stages": f"at most {request.max_stages}",
                "Branches": str(request.branches),
                "Output": f"{request.out_dir}/<workflow id>/report.md",
            }),
        )
    except WorkflowAlreadyStartedError:
        raise CliError(f"a run with id {wid} already exists; pick another --id") from None


async def _investigate(config: NavigatorConfig, request: InvestigationRequest, wid: str, models: list[str], *,
                       detach: bool, json_out: bool) -> ExitCode:
    async with open_session(config, allow_embedded=not detach, in_process_worker=False if detach else None) as session:
        say_server(session)
        await refuse_unservable_on_workers(session, models)
        handle = await _start(session, request, wid)
        link = announce_started(session, wid, f"investigation, {request.model}, {request.mode.value}")
        if detach:
            print_started_id(session, wid, link, json_out)
            return ExitCode.OK
        closed = asyncio.ensure_future(handle.result())
        try:
            result = await follow_to_result(session, handle, closed, request.mode == ExecutionMode.INTERACTIVE)
        finally:
            await cancel_and_wait(closed)
        if json_out:
            print_json({**result.model_dump(mode="json"), "ui_url": link})
        else:
            report = Path(result.report_path) if result.report_path else None
            if report is not None and report.is_file():
                stdout.print(report.read_text(encoding="utf-8"), markup=False, soft_wrap=True)
            print_block(stdout, investigation_panel(result))
            if result.report_path:
                stdout.print(f"report written to {result.report_path} (+ {result.report_json_path})", markup=False,
                             soft_wrap=True)
            if link:
                stdout.print(f"Web UI: {link}", markup=False, soft_wrap=True)
        say_after(session)
        return exit_code_for_result(result)


