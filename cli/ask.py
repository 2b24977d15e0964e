"""``navigator ask REPO QUESTION``: a cited answer from the research workflow (plan → ReAct → refine → answer).

Prints ``answer.md`` (or, written on another machine, the run's summary) above the run's panel.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from temporalio.client import WorkflowHandle

from durable_navigator.cli.common import config_of, run_async, stdout
from durable_navigator.cli.config import NavigatorConfig
from durable_navigator.cli.connect import TemporalSession
from durable_navigator.cli.display import print_block, research_panel
from durable_navigator.cli.errors import ExitCode, handles_errors
from durable_navigator.cli.launch import launch, research_settings, start_run
from durable_navigator.cli.runrequest import build_research_request, check_models, new_run_id
from durable_navigator.cli.sources import settled_source
from durable_navigator.navcore.research.research import ResearchRequest, ResearchResult
from durable_navigator.navcore.run_kinds import RESEARCH
from durable_navigator.navcore.navigator.state import ExecutionMode

__all__ = ["run_ask"]

# the command's signature and help: cli/run_commands.py (``navigator ask --help`` imports only that)


@handles_errors
def run_ask(
    ctx: typer.Context,
    repo: str,
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
    ref: str | None = None,
    source: str = "auto",
) -> None:
    """The ``navigator ask`` command (its options and help: :mod:`cli.run_commands`)."""
    config = config_of(ctx)
    request = build_research_request(repo, question, config=config, interactive=interactive, budget_usd=budget_usd,
                                     model=model, out=out, profile=profile, profiles_file=profiles_file, ref=ref)
    models = sorted({request.model, *(p.model for p in request.profiles.values() if p.model)})
    check_models(models, config, local_worker=config.temporal.address is None and not detach)
    wid = workflow_id or new_run_id(RESEARCH, Path(request.repo_path))
    code = run_async(_ask(config, request, wid, models, detach=detach, json_out=json_out, source=source))
    raise typer.Exit(int(code))


async def _ask(config: NavigatorConfig, request: ResearchRequest, wid: str, models: list[str], *, detach: bool,
               json_out: bool, source: str = "auto") -> ExitCode:
    async def start(session: TemporalSession) -> WorkflowHandle:
        # after the workers' refusals, before the start: a snapshot is uploaded only for a run that starts
        sourced = await settled_source(config, request, source)
        return await start_run(session, RESEARCH, sourced, wid, text=request.question, repo=sourced.repo_path,
                               model=request.model, verb="ask", label="Question",
                               settings=research_settings(request))

    async def show(result: ResearchResult, link: str | None, handle: WorkflowHandle[Any, Any]) -> None:
        answer = _answer_text(result)
        if answer:
            stdout.print(answer, markup=False, soft_wrap=True)
        print_block(stdout, research_panel(result))
        if result.answer_path:
            stdout.print(f"answer written to {result.answer_path}", markup=False, soft_wrap=True)
        if link:
            stdout.print(f"Web UI: {link}", markup=False, soft_wrap=True)

    return await launch(config, models, interactive=request.mode == ExecutionMode.INTERACTIVE, detach=detach,
                        json_out=json_out, what=f"research, {request.model}, {request.mode.value}", start=start,
                        show=show, extra_json=lambda result: {"answer": _answer_text(result)})


def _answer_text(result: ResearchResult) -> str | None:
    """answer.md when this machine can read it (a remote worker wrote it elsewhere: the summary then)."""
    if result.answer_path and Path(result.answer_path).is_file():
        return Path(result.answer_path).read_text(encoding="utf-8")
    return result.summary or None


