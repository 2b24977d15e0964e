"""``navigator explore --branches N``: branch-and-compare of one exploration (``ExploreBranchesWorkflow``)."""

from __future__ import annotations

import asyncio

from rich.panel import Panel
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import WorkflowAlreadyStartedError

from durable_navigator.cli.common import cancel_and_wait, print_json, stdout
from durable_navigator.cli.config import NavigatorConfig
from durable_navigator.cli.connect import open_session
from durable_navigator.cli.errors import CliError, ExitCode, RunFailedError, stderr
from durable_navigator.cli.follow import follow_run
from durable_navigator.navcore.branches import BranchExploreRequest, BranchExploreResult
from durable_navigator.navcore.budget import format_usd
from durable_navigator.navcore.requests import ExplorationRequest

__all__ = ["BRANCHES_WORKFLOW_TYPE", "explore_branches", "branches_panel"]

#: the branch-and-compare workflow's registered type name (public API)
BRANCHES_WORKFLOW_TYPE = "ExploreBranchesWorkflow"


def branches_panel(result: BranchExploreResult, ui_link: str | None) -> Panel:
    """Every branch's score and which one was kept."""
    lines = [f"stop reason: [bold]{result.stop_reason.value}[/bold]"
             + (f" ({result.stop_detail})" if result.stop_detail else "")
             + f" · completed normally: {'yes' if result.completed_normally else 'no'}",
             f"cost: ${result.cost_usd:.4f} of ${result.max_usd:.4f}"]
    for b in result.scores:
        c = next((c for c in result.children if c.workflow_id == b.workflow_id), None)
        lines.append(f"{'[bold green]kept[/bold green] ' if b.kept else ''}{b.workflow_id} ({b.strategy}): "
                     f"{b.covered} goal identifiers in {b.tokens} tokens → score {b.score}"
                     + (f", {c.stop_reason}, {format_usd(c.cost_micros)} of a {format_usd(c.slice_micros)} slice"
                        if c else ""))
    if result.context_path:
        lines.append(f"context: [bold green]{result.context_path}[/bold green]")
    if ui_link:
        lines.append(f"Web UI: {ui_link}")
    return Panel("\n".join(lines), title=result.workflow_id, expand=False)


async def explore_branches(config: NavigatorConfig, request: ExplorationRequest, branches: int, wid: str, *,
                           detach: bool, json_out: bool) -> ExitCode:
    """Start the branches run, follow it, print the kept pack and the scores."""
    async with open_session(config, allow_embedded=not detach, in_process_worker=False if detach else None) as session:
        if session.embedded is not None:
            stderr.print(f"embedded Temporal started: gRPC {session.address} · Web UI {session.ui_base}")
        try:
            handle = await session.client.start_workflow(
                BRANCHES_WORKFLOW_TYPE, BranchExploreRequest(exploration=request, branches=branches), id=wid,
                task_queue=session.task_queue, result_type=BranchExploreResult,
                memo={"goal": request.goal, "repo": request.repo_path, "kind": "explore-branches"})
        except WorkflowAlreadyStartedError:
            raise CliError(f"a run with id {wid} already exists; pick another --id") from None
        link = session.ui_link(wid)
        stderr.print(f"started [bold]{wid}[/bold] ({branches} branches, {request.model})")
        if link:
            stderr.print(f"Web UI: {link}", markup=False, soft_wrap=True)
        if detach:
            if json_out:
                print_json({"workflow_id": wid, "ui_url": link, "task_queue": session.task_queue})
            else:
                stdout.print(wid)
            return ExitCode.OK
        closed = asyncio.ensure_future(handle.result())
        try:
            await follow_run(session, handle, interactive=False, closed=closed)
            result: BranchExploreResult = await closed
        except WorkflowFailureError as exc:
            cause = getattr(exc.cause, "message", None) or str(exc.cause or exc)
            raise RunFailedError(f"run {wid} failed: {cause}; see the Web UI for the history") from None
        finally:
            await cancel_and_wait(closed)
        if json_out:
            print_json({**result.model_dump(mode="json"), "ui_url": link})
        else:
            stdout.print(branches_panel(result, link))
        return ExitCode.RUN_FAILED if result.stop_reason.value == "failed" else ExitCode.OK
