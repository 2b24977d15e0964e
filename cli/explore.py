"""``navigator explore REPO GOAL``: start an exploration and follow it to its context pack."""

from __future__ import annotations

import asyncio
import re
import uuid
from pathlib import Path

import typer
from temporalio.client import WorkflowHandle
from temporalio.service import RPCError

from durable_navigator.navcore.modelspec import parse_model_spec
from durable_navigator.activities.pricing_loader import load_pricing_table
from durable_navigator.cli.branches import explore_branches
from durable_navigator.cli.common import cancel_and_wait, config_of, print_json, run_async, stdout
from durable_navigator.cli.config import NavigatorConfig
from durable_navigator.cli.connect import (
    TemporalSession,
    announce_started,
    open_session,
    print_started_id,
    say_after,
    say_server,
)
from durable_navigator.cli.display import plan_text, print_block, result_panel
from durable_navigator.cli.errors import CliError, ExitCode, TemporalUnreachableError, handles_errors, stderr
from durable_navigator.cli.follow import follow_to_result
from durable_navigator.cli.handles import WORKFLOW_TYPE, query_run
from durable_navigator.cli.preflight import (
    IN_PROCESS,
    problems_here,
    refuse_unservable,
    refuse_unservable_on_workers,
)
from durable_navigator.cli.reads import exit_code_for_result
from durable_navigator.cli.runinput import budget_or_default, check_repository, check_text, validated
from durable_navigator.navtypes.errors import BudgetError, ModelError
from durable_navigator.navtypes.levels import MAX_TOKEN_BUDGET, MIN_TOKEN_BUDGET
from durable_navigator.navcore.messages import QUERY_STATUS
from durable_navigator.navcore.report import TurnReport, run_details_markdown, run_summary
from durable_navigator.navcore.guardrails import RunProfile
from durable_navigator.navcore.model import StreamGuard
from durable_navigator.navcore.requests import ApprovalConfig, ExplorationRequest, ExplorationResult, ModelCallConfig
from durable_navigator.navcore.state import ExecutionMode

__all__ = ["run_explore", "build_request", "new_workflow_id", "validate_model", "refuse_unservable",
           "check_token_budget", "say_server", "say_after", "request_settings"]

# the command's signature and help: cli/run_commands.py (``navigator explore --help`` imports only that)

#: workflow ids: ``nav-<repo name>-<8 hex>``; the slug keeps ids readable in the Web UI
_SLUG = re.compile(r"[^a-z0-9]+")
_SLUG_CHARS = 32


def new_workflow_id(repo: Path) -> str:
    """A fresh, readable workflow id for an exploration of ``repo``."""
    slug = _SLUG.sub("-", repo.name.lower()).strip("-")[:_SLUG_CHARS] or "repo"
    return f"nav-{slug}-{uuid.uuid4().hex[:8]}"


def validate_model(model: str, config: NavigatorConfig, local_worker: bool) -> None:
    """Refuse what the CLI can tell alone: an unknown or unpriced model, a missing local script.

    Whether the worker can serve it (credentials, its prices, its files) is asked of the
    worker: :mod:`cli.preflight`.
    """
    spec = parse_model_spec(model, frozenset(config.all_endpoints()))  # the one parser: ModelError says what to do
    # BudgetError names how to add a price (a local endpoint declares its own in navigator.yaml)
    load_pricing_table(config.pricing_file, endpoints=config.endpoints).rates_for(spec.model)
    script = spec.script or ""
    if script and local_worker and not Path(script).expanduser().is_file():
        raise ModelError(f"decision script {script} does not exist; pass scripted:<path of a YAML/JSON file>")


def stream_guard(config: NavigatorConfig, profile: RunProfile | None) -> StreamGuard:
    """The run's stream guard: the run profile's, else navigator.yaml / the environment's."""
    if profile is not None and profile.stream is not None:
        return profile.stream
    return StreamGuard(first_chunk_timeout_s=config.stream.first_chunk_timeout_s,
                       inter_chunk_timeout_s=config.stream.inter_chunk_timeout_s)


def check_token_budget(tokens: int, what: str) -> None:
    """The map's budget must hold the engine's smallest map and no more than its largest; ``what`` names it."""
    if tokens > MAX_TOKEN_BUDGET:
        raise BudgetError(f"{what} is above the largest map of {MAX_TOKEN_BUDGET:,} tokens; "
                          f"use {MIN_TOKEN_BUDGET} to {MAX_TOKEN_BUDGET}")
    if tokens < MIN_TOKEN_BUDGET:
        raise BudgetError(
            f"{what} is below the minimum map size of {MIN_TOKEN_BUDGET} tokens (the repo map's "
            f"header alone needs that many); use {MIN_TOKEN_BUDGET} or more"
        )


def build_request(
    repo: Path,
    goal: str,
    *,
    config: NavigatorConfig,
    interactive: bool,
    budget_usd: str | None,
    tokens: int | None,
    model: str | None,
    max_iterations: int | None,
    out: Path | None,
    profile: Path | None = None,
    planning: str = "auto",
    review: bool = False,
) -> ExplorationRequest:
    """Validate the inputs and build the workflow input (no credentials in it, ever)."""
    root = check_repository(repo)
    goal = check_text(goal, "GOAL", '"how is the budget enforced?"')
    budget = budget_or_default(budget_usd, config.defaults.budget_usd, config.source)
    if tokens is not None:
        check_token_budget(tokens, f"--tokens {tokens}")
    else:
        where = f" in {config.source}" if config.source else ""
        check_token_budget(config.defaults.token_budget, f"defaults.token_budget {config.defaults.token_budget}{where}")
    run_profile = None
    if profile is not None:
        from durable_navigator.activities.profiles import load_run_profile

        if not profile.is_file():
            raise CliError(f"--profile {profile} does not exist; pass a run-profile YAML file")
        run_profile = load_run_profile(profile)
    return validated(
        ExplorationRequest,
        repo_path=str(root),
        goal=goal,
        mode=ExecutionMode.INTERACTIVE if interactive else ExecutionMode.AUTONOMOUS,
        budget_usd=budget,
        token_budget=tokens if tokens is not None else config.defaults.token_budget,
        model=(model or config.model).strip(),
        max_iterations=max_iterations if max_iterations is not None else config.defaults.max_iterations,
        out_dir=str((out or config.defaults.out_dir).expanduser().resolve()),
        approval=ApprovalConfig(timeout_s=config.defaults.approval_timeout_s),
        profile=run_profile,
        planning=planning,
        review=review,
        model_call=ModelCallConfig(stream=stream_guard(config, run_profile)),
    )


@handles_errors
def run_explore(
    ctx: typer.Context,
    repo: Path,
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
) -> None:
    """The ``navigator explore`` command (its options and help: :mod:`cli.run_commands`)."""
    config = config_of(ctx)
    request = build_request(
        repo, goal, config=config, interactive=interactive, budget_usd=budget_usd, tokens=tokens,
        model=model, max_iterations=max_iterations, out=out, profile=profile,
        planning=planning, review=review,
    )  # fmt: skip
    local_worker = config.temporal.address is None and not detach
    models = request.models()  # the run's model and the ones its profile's routing rules name
    for name in models:
        validate_model(name, config, local_worker)
    if local_worker:
        # the in-process worker will serve the run: it is this process, so ask here, before any server starts
        problems = problems_here(models, config)
        for name in models:
            refuse_unservable(name, problems, IN_PROCESS)
    wid = workflow_id or new_workflow_id(Path(request.repo_path))
    if branches > 1:
        if interactive:
            raise CliError("--branches runs its explorations autonomously; drop --interactive or --branches")
        code = run_async(explore_branches(config, request, branches, wid, request_settings(request), detach=detach,
                                          json_out=json_out))
        raise typer.Exit(int(code))
    code = run_async(_explore(config, request, wid, detach=detach, json_out=json_out))
    raise typer.Exit(int(code))


def request_settings(request: ExplorationRequest) -> dict[str, str]:
    """The settings a run started with, for its static details in the Web UI."""
    settings = {
        "Model": request.model,
        "Mode": request.mode.value,
        "Budget": f"${request.budget_usd:.4f}",
        "Map budget": f"{request.token_budget} tokens",
        "Max iterations": str(request.max_iterations),
        "Planning": request.planning + (" with review" if request.review else ""),
        "Output": f"{request.out_dir}/<workflow id>/context.md",
    }
    if request.profile is not None:
        settings["Run profile"] = "given (guardrails of the profile)"
    return settings


async def _start(session: TemporalSession, request: ExplorationRequest, wid: str) -> WorkflowHandle:
    from temporalio.exceptions import WorkflowAlreadyStartedError

    try:
        return await session.client.start_workflow(
            WORKFLOW_TYPE,
            request,
            id=wid,
            task_queue=session.task_queue,
            result_type=ExplorationResult,
            memo={"goal": request.goal, "repo": request.repo_path},
            static_summary=run_summary(request.goal, request.repo_path, request.model),
            static_details=run_details_markdown(request.goal, request.repo_path, request_settings(request)),
        )
    except WorkflowAlreadyStartedError:
        raise CliError(f"a run with id {wid} already exists; pick another --id") from None
    except RPCError as exc:
        raise TemporalUnreachableError(
            f"lost Temporal at {session.address} before {wid} started ({exc.message[:120]}); nothing was started: "
            "retry when the server is back"
        ) from None


async def _explore(
    config: NavigatorConfig, request: ExplorationRequest, wid: str, *, detach: bool, json_out: bool
) -> ExitCode:
    async with open_session(config, allow_embedded=not detach, in_process_worker=False if detach else None) as session:
        say_server(session)
        await refuse_unservable_on_workers(session, request.models())
        handle = await _start(session, request, wid)
        link = announce_started(session, wid, f"{request.model}, {request.mode.value}")
        if detach:
            print_started_id(session, wid, link, json_out)
            return ExitCode.OK
        # one long poll of the history serves both the follower and the result; it is
        # always finished (or cancelled and awaited) before the session closes
        closed = asyncio.ensure_future(handle.result())
        try:
            result = await follow_to_result(session, handle, closed, request.mode == ExecutionMode.INTERACTIVE)
        finally:
            await cancel_and_wait(closed)
        if json_out:
            print_json({**result.model_dump(mode="json"), "ui_url": link})
        else:
            await _print_stage_plan(handle)
            print_block(stdout, result_panel(result))
            if result.context_path:
                stdout.print(f"context written to {result.context_path}", markup=False, soft_wrap=True)
            if link:
                stdout.print(f"Web UI: {link}", markup=False, soft_wrap=True)
        say_after(session)
        return exit_code_for_result(result)


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
