"""Starting a run and following it to its result: what ``explore``, ``ask`` and ``investigate`` share.

:func:`start_run` starts a workflow of a kind (``navcore/run_kinds.py``) with its memo, its Web UI
summary and details, and one way of refusing a taken id or a lost server; :func:`launch` opens the
session, checks the task queue's workers, starts, announces, and either prints the id
(``--detach``) or follows the run to its result and hands it to the command's ``show``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from temporalio.client import WorkflowHandle
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError

from durable_navigator.cli.common import cancel_and_wait, print_json
from durable_navigator.cli.config import NavigatorConfig
from durable_navigator.cli.connect import (
    TemporalSession,
    announce_started,
    open_session,
    print_started_id,
    say_after,
    say_server,
)
from durable_navigator.cli.errors import CliError, ExitCode, TemporalUnreachableError
from durable_navigator.cli.follow import follow_to_result
from durable_navigator.cli.preflight import refuse_unservable_on_workers
from durable_navigator.cli.results_home import bring_run_home
from durable_navigator.cli.stores import open_artifact_store
from durable_navigator.cli.runrows import exit_code_for_result
from durable_navigator.navcore.navigator.report import run_details_markdown, run_summary
from durable_navigator.navcore.navigator.requests import ExplorationRequest
from durable_navigator.navcore.research.research import ResearchRequest
from durable_navigator.navcore.run_kinds import RunKind

__all__ = ["start_run", "launch", "request_settings", "research_settings"]


def request_settings(request: ExplorationRequest) -> dict[str, str]:
    """The settings an exploration started with, for its static details in the Web UI."""
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


def research_settings(request: ResearchRequest) -> dict[str, str]:
    """The settings a research run (``ask``) started with, for its static details in the Web UI."""
    return {
        "Model": request.model,
        "Mode": request.mode.value,
        "Budget": f"${request.budget_usd:.4f}",
        "Profile": request.profile.name,
        "Output": f"{request.out_dir}/<workflow id>/answer.md",
    }


async def start_run(session: TemporalSession, kind: RunKind, request: Any, wid: str, *, text: str, repo: str,
                    model: str, verb: str, settings: dict[str, str], label: str = "Goal") -> WorkflowHandle:
    """Start a run of ``kind`` (memo, Web UI summary and details); a taken id or a lost server is one line."""
    try:
        return await session.client.start_workflow(
            kind.workflow_type, request, id=wid, task_queue=session.task_queue, result_type=kind.result_type,
            memo=kind.memo(text, repo),
            static_summary=run_summary(text, repo, model, verb=verb),
            static_details=run_details_markdown(text, repo, settings, label=label),
        )
    except WorkflowAlreadyStartedError:
        raise CliError(f"a run with id {wid} already exists; pick another id (--id)") from None
    except RPCError as exc:
        raise TemporalUnreachableError(
            f"lost Temporal at {session.address} before {wid} started ({exc.message[:120]}); nothing was started: "
            "retry when the server is back"
        ) from None


async def launch(config: NavigatorConfig, models: list[str], *, interactive: bool, detach: bool, json_out: bool,
                 what: str,
                 start: Callable[[TemporalSession], Any], show: Callable[[Any, str | None, WorkflowHandle], Any],
                 extra_json: Callable[[Any], dict[str, Any]] | None = None) -> ExitCode:
    """Open the session, start the run (``start(session)`` → its handle), announce it (``what``: the run's
    short description); ``interactive``: the run waits for verdicts (the follower asks for them); with ``detach`` print its id, else follow it to its result and print that as JSON
    (plus ``extra_json(result)``) or through ``show(result, link, handle)`` (awaited). The run's files are
    written here from the artifact store before either (:mod:`cli.results_home`), whatever host ran it."""
    # the store the files come home from answers before anything starts (a bad artifacts: section is one line)
    store = None if detach else await asyncio.to_thread(open_artifact_store, config)
    async with open_session(config, allow_embedded=not detach, in_process_worker=False if detach else None) as session:
        say_server(session)
        await refuse_unservable_on_workers(session, models)
        handle = await start(session)
        link = announce_started(session, handle.id, what)
        if detach:
            print_started_id(session, handle.id, link, json_out)
            return ExitCode.OK
        # one long poll of the history serves both the follower and the result; it is
        # always finished (or cancelled and awaited) before the session closes
        closed = asyncio.ensure_future(handle.result())
        try:
            result = await follow_to_result(session, handle, closed, interactive)
        finally:
            await cancel_and_wait(closed)
        if store is not None:
            await bring_run_home(session.client, store, result)
        if json_out:
            print_json({**result.model_dump(mode="json"), "ui_url": link, **(extra_json(result) if extra_json else {})})
        else:
            await show(result, link, handle)
        say_after(session)
        return exit_code_for_result(result)
