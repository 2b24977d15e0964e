"""What ``cli/batch.py``'s commands run: ``navigator batch``: unattended explorations of many repositories × goals under one budget.

The commands' signatures and help are in :mod:`cli.batch` (standard library + typer only,
so their ``--help`` imports nothing of this)."""

from __future__ import annotations

import asyncio
import re
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import typer
from temporalio.client import (Client, WorkflowExecutionDescription, WorkflowExecutionStatus, WorkflowFailureError,
                               WorkflowHandle)
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy

from durable_navigator.activities.batch import JobCheck, load_jobs_file
from durable_navigator.cli.batch_sources import GitRefs, settled_batch, source_problems, with_git_sources
from durable_navigator.cli.common import cancel_and_wait, config_of, print_json, run_async, stdout
from durable_navigator.cli.config import NavigatorConfig
from durable_navigator.cli.connect import TemporalSession, open_session, say_after, say_server
from durable_navigator.cli.errors import CliError, ExitCode, RunFailedError, RunNotFoundError, handles_errors, stderr
from durable_navigator.cli.runrequest import stream_guard, validate_model
from durable_navigator.cli.handles import describe_run, query_run, signal_run, status_name
from durable_navigator.cli.preflight import problems_here, problems_on_workers
from durable_navigator.cli.results_home import bring_home
from durable_navigator.cli.stores import is_shared_store, open_artifact_store
from durable_navigator.cli.runinput import parse_usd, text_problem, validated
from durable_navigator.navcore.navigator.requests import ModelCallConfig
from durable_navigator.navcore.batch.batch import BatchJob, BatchProgress, BatchRequest, BatchResult, BatchStopInput, JobStatus, resolve_jobs
from durable_navigator.navcore.navigator.report import markdown_text
from durable_navigator.navcore.navigator.messages import BATCH_WORKFLOW, QUERY_BATCH_PROGRESS
from durable_navigator.navcore.run.sources import display_root
from durable_navigator.navtypes.errors import BudgetError, ModelError, NavigatorError

__all__ = ["build_batch_request", "new_batch_id", "start_batch", "follow_batch"]


#: how often `run` prints progress while it waits
_PROGRESS_EVERY_S = 5.0
_ID_CHARS = re.compile(r"[^A-Za-z0-9._:-]+")


def new_batch_id(jobs_file: Path) -> str:
    """A fresh, readable batch id: ``batch-<file stem>-<8 hex>``."""
    stem = _ID_CHARS.sub("-", jobs_file.stem).strip("-")[:32] or "jobs"
    return f"batch-{stem}-{uuid.uuid4().hex[:8]}"


def _usd(text: str | None, name: str) -> Decimal | None:
    return parse_usd(text, name) if text is not None else None


def _job_checker(config: NavigatorConfig, check_repos: bool, local_worker: bool, refs: GitRefs) -> JobCheck:
    """Per-job checks the schema cannot make: model known, priced and (for the in-process
    worker) servable here, repository present (a path here, a git URL's ref resolved into ``refs``);
    each model and each git ref is checked once. With an object store every path is checked whatever
    ``check_repos`` says: the batch uploads it from here."""
    verdicts: dict[str, str | None] = {}
    uploads = is_shared_store(config)

    def model_problem(model: str) -> str | None:
        if model not in verdicts:
            try:
                validate_model(model, config, local_worker)
                verdicts[model] = problems_here([model], config).get(model) if local_worker else None
            except NavigatorError as exc:  # a refusal becomes this job's problem line
                verdicts[model] = str(exc)
        return verdicts[model]

    def check(job: BatchJob) -> list[tuple[str, str]]:
        problems = []
        problem = model_problem(job.model)
        if problem:
            problems.append(("model", problem))
        text = text_problem(job.goal, "the goal")
        if text:
            problems.append(("goal", f"{text}; say what the job is for in plain text"))
        problems += source_problems(job, refs, check_repos or uploads, uploads=uploads)
        return problems

    return check


def _worker_refusals(problems: dict[str, str], where: str) -> JobCheck:
    """The jobs whose model the worker(s) refused, as per-job problems (re-read for their lines)."""
    return lambda job: [("model", f"{where} cannot serve it: {problems[job.model]}")] if job.model in problems else []


def build_batch_request(
    jobs_file: Path,
    *,
    config: NavigatorConfig,
    budget_usd: str | None,
    concurrency: int | None,
    batch_id: str | None,
    out: Path | None,
    check_repos: bool = True,
    local_worker: bool = False,
) -> BatchRequest:
    """Load + validate the jobs file and the options (every problem at once); nothing is started
    on error. ``local_worker``: this command's in-process worker will serve the jobs. Git URL jobs name
    their resolved commit; paths stay paths until :func:`cli.batch_sources.settled_batch`."""
    refs = GitRefs()
    spec = load_jobs_file(jobs_file, check_job=_job_checker(config, check_repos, local_worker, refs))
    jobs = with_git_sources(resolve_jobs(spec), refs)
    total = _usd(budget_usd, "--budget-usd") or spec.total_budget_usd
    if total is None:
        raise BudgetError("the batch has no budget; pass --budget-usd or set total_budget_usd in the jobs file")
    return validated(
        BatchRequest,
        batch_id=batch_id or new_batch_id(jobs_file),
        jobs=jobs,
        total_budget_usd=total,
        max_concurrency=concurrency or spec.max_concurrency or 4,
        out_dir=str((out or config.defaults.out_dir).expanduser().resolve()),
        task_queue=config.temporal.task_queue,
        model_call=ModelCallConfig(stream=stream_guard(config, None)),
    )


@handles_errors
def run_run(
    ctx: typer.Context,
    jobs_file: Path,
    budget_usd: str | None,
    concurrency: int | None,
    batch_id: str | None,
    out: Path | None,
    detach: bool,
    check_repos: bool,
    json_out: bool,
) -> None:
    """The ``navigator batch run`` command (its options and help: :mod:`cli.batch`)."""
    config = config_of(ctx)
    local_worker = config.temporal.address is None and not detach
    req = build_batch_request(jobs_file, config=config, budget_usd=budget_usd, concurrency=concurrency,
                              batch_id=batch_id, out=out, check_repos=check_repos, local_worker=local_worker)
    raise typer.Exit(int(run_async(_run(config, req, jobs_file, detach=detach, json_out=json_out))))


async def start_batch(session: TemporalSession, req: BatchRequest) -> WorkflowHandle[object, BatchResult]:
    """Start the batch ``req`` (or join it: the same id while it runs; recover its finished children after it closed)."""
    return await session.client.start_workflow(
        BATCH_WORKFLOW,
        req,
        id=req.batch_id,
        task_queue=session.task_queue,
        result_type=BatchResult,
        # same id while running → join it; after it closed → a new run that recovers finished children
        id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
        id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
        memo={"jobs": len(req.jobs)},
        static_summary=markdown_text(f"batch of {len(req.jobs)} jobs · ${req.total_budget_usd:.4f} · "
                                     f"{req.max_concurrency} at once"),
        static_details="\n\n".join(
            markdown_text(f"{job.index}. {job.name}: {job.goal} ({display_root(job.repo_path)}, {job.model})") for job in req.jobs[:50]
        ),
    )


async def _run(config: NavigatorConfig, req: BatchRequest, jobs_file: Path, *, detach: bool,
               json_out: bool) -> ExitCode:
    # the store the files come home from answers before anything starts (a bad artifacts: section is one line)
    store = None if detach else await asyncio.to_thread(open_artifact_store, config)
    async with open_session(config, allow_embedded=not detach, in_process_worker=False if detach else None) as session:
        say_server(session)
        if not session.in_process_worker:
            problems = await problems_on_workers(session, [job.model for job in req.jobs])
            if problems:
                where = f"the worker(s) on task queue {session.task_queue!r}"
                load_jobs_file(jobs_file, check_job=_worker_refusals(problems, where))  # raises, with lines
                # only reached when the file changed since it was read
                raise ModelError(f"{where} cannot serve: " + "; ".join(f"{m} ({p})" for m, p in problems.items()))
        # after the workers' refusals, before the start: snapshots are uploaded only for a batch that starts
        req = await settled_batch(config, req)
        handle = await start_batch(session, req)
        stderr.print(f"batch [bold]{req.batch_id}[/bold]: {len(req.jobs)} jobs · ${req.total_budget_usd:.4f} · "
                     f"{req.max_concurrency} at once")
        link = session.ui_link(req.batch_id)
        if link:
            stderr.print(f"Web UI: {link}", markup=False, soft_wrap=True)
        if detach:
            print_json({"batch_id": req.batch_id, "ui_url": link}) if json_out else stdout.print(req.batch_id)
            return ExitCode.OK
        result = await follow_batch(handle)
        assert store is not None
        await asyncio.to_thread(bring_home, store, result)
        _print_result(result, json_out)
        say_after(session)
        return ExitCode.OK if result.count(JobStatus.FAILED) == 0 else ExitCode.RUN_FAILED


async def follow_batch(handle: WorkflowHandle[object, BatchResult]) -> BatchResult:
    """Wait for the batch's result, printing its progress to stderr every few seconds; a failed batch is a RunFailedError."""
    waiter = asyncio.ensure_future(handle.result())
    try:
        while not waiter.done():
            await asyncio.wait({waiter}, timeout=_PROGRESS_EVERY_S)
            if not waiter.done():
                p = await query_run(handle, QUERY_BATCH_PROGRESS, BatchProgress)
                stderr.print(f"  {p.completed + p.failed + p.skipped}/{p.jobs_total} done · running {p.running} · "
                             f"failed {p.failed} · spent ${p.spent_usd:.4f} of ${p.total_usd:.4f}", markup=False)
        return waiter.result()
    except WorkflowFailureError as exc:
        raise RunFailedError(f"batch {handle.id} failed: {exc.cause or exc}; see the Web UI") from None
    finally:
        await cancel_and_wait(waiter)


def _print_result(result: BatchResult, json_out: bool) -> None:
    if json_out:
        print_json(result)
        return
    # a line per job, then its context pack (or error) whole: a table at 80 columns cut the paths
    stdout.print(f"batch {result.batch_id}: ${result.spent_usd:.4f} of ${result.total_usd:.4f}", markup=False)
    for o in result.outcomes:
        head = [o.name, f"{o.kind}" if o.kind != "explore" else "", o.status.value, o.stop_reason or "",
                f"${o.spent_micros / 1e6:.4f}", f"{o.iterations} iterations"]
        stdout.print(" · ".join(part for part in head if part), markup=False, soft_wrap=True)
        if o.context_path:
            stdout.print(f"  {o.context_path}", markup=False, soft_wrap=True)
        if o.error:
            stdout.print(f"  error: {' '.join(o.error.split())}", markup=False, soft_wrap=True)
    if result.results_path:
        stdout.print(f"results: {result.results_path}", markup=False, soft_wrap=True)


@handles_errors
def run_status(
    ctx: typer.Context,
    batch_id: str,
    json_out: bool,
) -> None:
    """The ``navigator batch status`` command (its options and help: :mod:`cli.batch`)."""
    config = config_of(ctx)
    progress = run_async(_progress(config, batch_id))
    if json_out:
        print_json(progress)
        return
    stdout.print(f"{progress.batch_id}: {progress.jobs_total} jobs · pending {progress.pending} · running "
                 f"{progress.running} · completed {progress.completed} · failed {progress.failed} · skipped "
                 f"{progress.skipped} · spent ${progress.spent_usd:.4f} of ${progress.total_usd:.4f}"
                 + (" · done" if progress.done else ""), markup=False)


async def _describe_batch(client: Client, batch_id: str,
                          result_type: type | None = None) -> tuple[WorkflowHandle[Any, Any], WorkflowExecutionDescription]:
    """:func:`describe_run`, refusing a run that is not a batch (an exploration's id): no such batch, exit 4.

    Without this its result or progress would be decoded as a batch's: a pydantic traceback.
    """
    handle, desc = await describe_run(client, batch_id, result_type=result_type)
    if desc.workflow_type != BATCH_WORKFLOW:
        raise RunNotFoundError(f"{batch_id} is not a batch (it is a {desc.workflow_type} run); `navigator batch ls` "
                               f"lists batches, `navigator status {batch_id}` shows that run")
    return handle, desc


async def _progress(config: NavigatorConfig, batch_id: str) -> BatchProgress:
    async with open_session(config) as session:
        handle, _ = await _describe_batch(session.client, batch_id)
        return await query_run(handle, QUERY_BATCH_PROGRESS, BatchProgress)


@handles_errors
def run_results(
    ctx: typer.Context,
    batch_id: str,
    wait: bool,
    json_out: bool,
) -> None:
    """The ``navigator batch results`` command (its options and help: :mod:`cli.batch`)."""
    config = config_of(ctx)
    result = run_async(_results(config, batch_id, wait))
    _print_result(result, json_out)
    raise typer.Exit(int(ExitCode.OK if result.count(JobStatus.FAILED) == 0 else ExitCode.RUN_FAILED))


async def _results(config: NavigatorConfig, batch_id: str, wait: bool) -> BatchResult:
    """The batch's result, its files (results.jsonl, summary.json, every job's) written here when missing."""
    async with open_session(config) as session:
        handle, desc = await _describe_batch(session.client, batch_id, result_type=BatchResult)
        if desc.status == WorkflowExecutionStatus.RUNNING:
            if not wait:
                raise CliError(f"batch {batch_id} is still running; pass --wait, or see "
                               f"`navigator batch status {batch_id}`")
            result = await follow_batch(handle)
        else:
            try:
                result = await handle.result()
            except WorkflowFailureError as exc:
                raise RunFailedError(f"batch {batch_id} failed: {exc.cause or exc}") from None
        await asyncio.to_thread(bring_home, session.artifact_store(), result)
        return result


@handles_errors
def run_list_batches(
    ctx: typer.Context,
    limit: int,
    json_out: bool,
) -> None:
    """The ``navigator batch ls`` command (its options and help: :mod:`cli.batch`)."""
    config = config_of(ctx)
    rows = run_async(_list_batches(config, limit))
    if json_out:
        print_json(rows)
    elif not rows:
        stdout.print("no batches")
    else:
        for row in rows:
            jobs = f" · {row['jobs']} jobs" if row["jobs"] is not None else ""
            started = (row["start_time"] or "")[:16].replace("T", " ")
            stdout.print(f"{row['batch_id']} · {row['status']}{jobs} · {started}", markup=False, soft_wrap=True)


async def _list_batches(config: NavigatorConfig, limit: int) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    async with open_session(config) as session:
        async for entry in session.client.list_workflows(f"WorkflowType = '{BATCH_WORKFLOW}'", limit=limit):
            try:
                memo = await entry.memo()
            except Exception:  # noqa: BLE001 - a memo we cannot decode just leaves the column empty
                memo = {}
            rows.append({
                "batch_id": entry.id,
                "run_id": entry.run_id,
                "status": status_name(entry.status),
                "jobs": memo.get("jobs") if isinstance(memo, dict) else None,
                "start_time": entry.start_time.isoformat() if entry.start_time else None,
                "close_time": entry.close_time.isoformat() if entry.close_time else None,
            })
    return rows


@handles_errors
def run_stop(
    ctx: typer.Context,
    batch_id: str,
    reason: str,
    sender: str,
) -> None:
    """The ``navigator batch stop`` command (its options and help: :mod:`cli.batch`)."""
    # --reason and --sender were checked by their options (cli.options): the stop message takes them
    config = config_of(ctx)
    payload = BatchStopInput(reason=reason or "stopped by user", sender=sender or "cli")
    run_async(_stop(config, batch_id, payload))
    stdout.print(f"stop sent to {batch_id}", markup=False)


async def _stop(config: NavigatorConfig, batch_id: str, payload: BatchStopInput) -> None:
    async with open_session(config) as session:
        # an exploration's id would take the signal as its own `stop` (the payload shapes differ): refuse it first
        await _describe_batch(session.client, batch_id)
        await signal_run(session.client, batch_id, "stop", payload)
