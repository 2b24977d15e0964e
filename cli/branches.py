"""``navigator explore --branches N``: branch-and-compare of one exploration (``ExploreBranchesWorkflow``)."""

from __future__ import annotations

import asyncio

from temporalio.client import WorkflowFailureError

from durable_navigator.cli.common import cancel_and_wait, print_json, stdout
from durable_navigator.cli.config import NavigatorConfig
from durable_navigator.cli.connect import open_session, print_started_id, say_after, say_server
from durable_navigator.cli.launch import start_run
from durable_navigator.cli.display import branches_panel, print_block
from durable_navigator.cli.errors import ExitCode, RunFailedError, stderr
from durable_navigator.cli.follow import follow_run
from durable_navigator.cli.preflight import refuse_unservable_on_workers
from durable_navigator.cli.results_home import bring_run_home
from durable_navigator.cli.stores import open_artifact_store
from durable_navigator.cli.sources import settled_source
from durable_navigator.navcore.batch.branches import BranchExploreRequest, BranchExploreResult
from durable_navigator.navcore.navigator.requests import ExplorationRequest
from durable_navigator.navcore.run_kinds import BRANCHES

__all__ = ["BRANCHES_WORKFLOW_TYPE", "explore_branches"]

#: the branch-and-compare workflow's registered type name (public API)
BRANCHES_WORKFLOW_TYPE = BRANCHES.workflow_type


async def explore_branches(config: NavigatorConfig, request: ExplorationRequest, branches: int, wid: str,
                           settings: dict[str, str], *, detach: bool, json_out: bool, source: str = "auto") -> ExitCode:
    """Start the branches run, follow it, print the kept pack and the scores (``settings``: the
    exploration's settings for the run's static details); the kept pack is written here from the store."""
    store = None if detach else await asyncio.to_thread(open_artifact_store, config)
    async with open_session(config, allow_embedded=not detach, in_process_worker=False if detach else None) as session:
        say_server(session)
        # every branch runs the same exploration: the task queue's workers must serve its models, as for explore
        await refuse_unservable_on_workers(session, request.models())
        request = await settled_source(config, request, source)  # one snapshot for every branch
        handle = await start_run(session, BRANCHES, BranchExploreRequest(exploration=request, branches=branches), wid,
                                 text=request.goal, repo=request.repo_path, model=request.model,
                                 verb=f"explore ({branches} branches)", settings={**settings, "Branches": str(branches)})
        link = session.ui_link(wid)
        stderr.print(f"started [bold]{wid}[/bold] ({branches} branches, {request.model})")
        if link:
            stderr.print(f"Web UI: {link}", markup=False, soft_wrap=True)
        if detach:
            print_started_id(session, wid, link, json_out)
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
        if store is not None:
            await bring_run_home(session.client, store, result)
        if json_out:
            print_json({**result.model_dump(mode="json"), "ui_url": link})
        else:
            print_block(stdout, branches_panel(result))
            if result.context_path:
                stdout.print(f"context pack: {result.context_path}", markup=False, soft_wrap=True)
            if link:
                stdout.print(f"Web UI: {link}", markup=False, soft_wrap=True)
        say_after(session)
        return ExitCode.RUN_FAILED if result.stop_reason.value == "failed" else ExitCode.OK
