"""``navigator ask REPO QUESTION``: a cited answer from the research workflow (plan → ReAct → refine → answer)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import typer
from temporalio.client import WorkflowHandle
from temporalio.exceptions import WorkflowAlreadyStartedError

from durable_navigator.cli.common import cancel_and_wait, config_of, print_json, run_async, stdout
from durable_navigator.cli.config import NavigatorConfig
from durable_navigator.cli.connect import TemporalSession, announce_started, open_session, print_started_id
from durable_navigator.cli.display import print_block, research_panel
from durable_navigator.cli.errors import CliError, ExitCode, handles_errors
from durable_navigator.cli.explore import (
    refuse_unservable,
    say_after,
    say_server,
    validate_model,
)
from durable_navigator.cli.follow import follow_to_result
from durable_navigator.cli.preflight import IN_PROCESS, problems_here, refuse_unservable_on_workers
from durable_navigator.cli.reads import exit_code_for_result
from durable_navigator.cli.runinput import budget_or_default, check_repository, check_text, validated
from durable_navigator.navcore.report import run_details_markdown, run_summary
from durable_navigator.navcore.requests import ApprovalConfig
from durable_navigator.navcore.research import ResearchRequest, ResearchResult
from durable_navigator.navcore.state import ExecutionMode
from durable_navigator.navtypes.errors import ConfigError

__all__ = ["run_ask", "build_research_request", "RESEARCH_WORKFLOW_TYPE", "new_research_id"]

# the command's signature and help: cli/run_commands.py (``navigator ask --help`` imports only that)

#: the research workflow's registered type name (public API)
RESEARCH_WORKFLOW_TYPE = "ResearchWorkflow"


def new_research_id(repo: Path) -> str:
    """A fresh, readable workflow id for a research run on ``repo``."""
    from durable_navigator.cli.explore import new_workflow_id

    return "ask-" + new_workflow_id(repo).removeprefix("nav-")


def build_research_request(
    repo: Path,
    question: str,
    *,
    config: NavigatorConfig,
    interactive: bool,
    budget_usd: str | None,
    model: str | None,
    out: Path | None,
    profile: str = "researcher",
    profiles_file: Path | None = None,
) -> ResearchRequest:
    """Validate the inputs and build the workflow input (no credentials in it, ever)."""
    from durable_navigator.activities.profiles import load_agent_profiles

    root = check_repository(repo)
    question = check_text(question, "QUESTION", '"how is the budget enforced?"')
    budget = budget_or_default(budget_usd, config.defaults.budget_usd, config.source)
    if profiles_file is not None and not profiles_file.is_file():
        raise CliError(f"--profiles {profiles_file} does not exist; pass an agent-profiles YAML file")
    profiles = load_agent_profiles(profiles_file)
    own = profiles.get(profile)
    if own is None:
        raise ConfigError(f"--profile {profile!r} is not a profile; use one of {', '.join(sorted(profiles))}")
    if own.kind != "research":
        research = sorted(n for n, p in profiles.items() if p.kind == "research")
        raise ConfigError(f"--profile {profile!r} is a {own.kind} profile; ask runs a research profile: "
                          f"{', '.join(research)}")
    return validated(
        ResearchRequest,
        repo_path=str(root),
        question=question,
        mode=ExecutionMode.INTERACTIVE if interactive else ExecutionMode.AUTONOMOUS,
        budget_usd=budget,
        model=(model or config.model).strip(),
        out_dir=str((out or config.defaults.out_dir).expanduser().resolve()),
        approval=ApprovalConfig(timeout_s=config.defaults.approval_timeout_s),
        profile=own,
        profiles=profiles,
        planning="direct" if own.planning == "direct" else "auto",
    )


@handles_errors
def run_ask(
    ctx: typer.Context,
    repo: Path,
    question: str,
    interactive: bool,
    budget_usd: str | None,
    model: str | None,
    profile: str,
    profiles_file: Path | None,
    out: Path | None,
    detach: bool,
    workflow_id: str | None,
    json_out: bool,
) -> None:
    """The ``navigator ask`` command (its options and help: :mod:`cli.run_commands`)."""
    config = config_of(ctx)
    request = build_research_request(repo, question, config=config, interactive=interactive, budget_usd=budget_usd,
                                     model=model, out=out, profile=profile, profiles_file=profiles_file)
    local_worker = config.temporal.address is None and not detach
    models = sorted({request.model, *(p.model for p in request.profiles.values() if p.model)})
    for name in models:
        validate_model(name, config, local_worker)
    if local_worker:
        problems = problems_here(models, config)  # the configured endpoints count, as for explore
        for name in models:
            refuse_unservable(name, problems, IN_PROCESS)
    wid = workflow_id or new_research_id(Path(request.repo_path))
    code = run_async(_ask(config, request, wid, models, detach=detach, json_out=json_out))
    raise typer.Exit(int(code))


async def _start(session: TemporalSession, request: ResearchRequest, wid: str) -> WorkflowHandle:
    try:
        return await session.client.start_workflow(
            RESEARCH_WORKFLOW_TYPE, request, id=wid, task_queue=session.task_queue, result_type=ResearchResult,
            memo={"goal": request.question, "repo": request.repo_path, "kind": "research"},
            static_summary=run_summary(request.question, request.repo_path, request.model, verb="ask"),
            static_details=run_details_markdown(request.question, request.repo_path, {
                "Model": request.model,
                "Mode": request.mode.value,
                "Budget": f"${request.budget_usd:.4f}",
                "Profile": request.profile.name,
                "Output": f"{request.out_dir}/<workflow id>/answer.md",
            }, label="Question"),
        )
    except WorkflowAlreadyStartedError:
        raise CliError(f"a run with id {wid} already exists; pick another --id") from None


async def _ask(config: NavigatorConfig, request: ResearchRequest, wid: str, models: list[str], *, detach: bool,
               json_out: bool) -> ExitCode:
    async with open_session(config, allow_embedded=not detach, in_process_worker=False if detach else None) as session:
        say_server(session)
        await refuse_unservable_on_workers(session, models)
        handle = await _start(session, request, wid)
        link = announce_started(session, wid, f"research, {request.model}, {request.mode.value}")
        if detach:
            print_started_id(session, wid, link, json_out)
            return ExitCode.OK
        closed = asyncio.ensure_future(handle.result())
        try:
            result = await follow_to_result(session, handle, closed, request.mode == ExecutionMode.INTERACTIVE)
        finally:
            await cancel_and_wait(closed)
        answer = _answer_text(result)
        if json_out:
            print_json({**result.model_dump(mode="json"), "ui_url": link, "answer": answer})
        else:
            if answer:
                stdout.print(answer, markup=False, soft_wrap=True)
            print_block(stdout, research_panel(result))
            if result.answer_path:
                stdout.print(f"answer written to {result.answer_path}", markup=False, soft_wrap=True)
            if link:
                stdout.print(f"Web UI: {link}", markup=False, soft_wrap=True)
        say_after(session)
        return exit_code_for_result(result)


def _answer_text(result: ResearchResult) -> str | None:
    """answer.md when this machine can read it (a remote worker wrote it elsewhere: the summary then)."""
    if result.answer_path and Path(result.answer_path).is_file():
        return Path(result.answer_path).read_text(encoding="utf-8")
    return result.summary or None


