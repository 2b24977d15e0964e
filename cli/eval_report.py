"""``navigator eval``'s batch and report: run the explorations durably, score every method, write the report.

The batch is ``navigator batch``'s (same workflow, same start policy: the same id joins a running
batch or recovers a finished one's children), on the session's Temporal (the embedded one when none
is configured). Each exploration's wall time is its child workflow's start-to-close time.
"""

from __future__ import annotations

import asyncio
import os
import platform
import time
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from durable_navigator.activities.artifacts import ArtifactStore
from durable_navigator.activities.evaluation.scoring import NavigatorRun, score_task
from durable_navigator.activities.pricing_loader import load_pricing_table
from durable_navigator.cli.batch_run import follow_batch, start_batch
from durable_navigator.cli.batch_sources import settled_batch
from durable_navigator.cli.common import stdout
from durable_navigator.cli.config import NavigatorConfig
from durable_navigator.cli.connect import open_session
from durable_navigator.cli.errors import ExitCode, stderr
from durable_navigator.cli.eval_cases import remove_run_checkouts
from durable_navigator.cli.connect import say_server
from durable_navigator.cli.preflight import problems_on_workers
from durable_navigator.cli.results_home import bring_home
from durable_navigator.navcore.batch.batch import BatchRequest, BatchResult, JobStatus
from durable_navigator.navcore.evaluation.html import report_html
from durable_navigator.navcore.evaluation.models import EvalReport, EvalRun, TaskResult
from durable_navigator.navcore.evaluation.summary import CHUNK_BM25, ENGINE, navigator_method, report_markdown, totals
from durable_navigator.navcore.model.modelspec import parse_model_spec
from durable_navigator.navtypes.errors import ModelError

__all__ = ["EvalOutcome", "run_batch", "write_report"]


@dataclass
class EvalOutcome:
    """The finished batch, each job's wall time, and how long this command waited."""

    result: BatchResult
    seconds: dict[int, float]
    wall_seconds: float


async def run_batch(config: NavigatorConfig, req: BatchRequest, store: ArtifactStore) -> EvalOutcome:
    """Start (or join) the eval's batch, follow it to the end, write its files here from ``store`` (every
    run's ``context.md`` + ``report.json``, the batch's ``results.jsonl``; a worker with an object store writes
    none) and read each child's wall time."""
    t0 = time.monotonic()
    async with open_session(config, allow_embedded=True, in_process_worker=None) as session:
        say_server(session)
        if not session.in_process_worker:
            problems = await problems_on_workers(session, sorted({job.model for job in req.jobs}))
            if problems:
                raise ModelError(f"the worker(s) on task queue {session.task_queue!r} cannot serve: "
                                 + "; ".join(f"{m} ({p})" for m, p in problems.items()))
        # each task's checkout is a snapshot when the workers share no disk with this machine (one per checkout)
        req = await settled_batch(config, req)
        handle = await start_batch(session, req)
        link = session.ui_link(req.batch_id)
        if link:
            stderr.print(f"Web UI: {link}", markup=False, soft_wrap=True)
        result = await follow_batch(handle)
        await asyncio.to_thread(bring_home, store, result)
        seconds: dict[int, float] = {}
        for o in result.outcomes:
            if o.status in (JobStatus.COMPLETED, JobStatus.FAILED):
                desc = await session.client.get_workflow_handle(o.workflow_id).describe()
                if desc.start_time and desc.close_time:
                    seconds[o.index] = (desc.close_time - desc.start_time).total_seconds()
    return EvalOutcome(result, seconds, time.monotonic() - t0)


def _machine() -> str:
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"
    return (f"{platform.node()} · {platform.system()} {platform.release()} {platform.machine()} · "
            f"{os.cpu_count()} cores · load {load} · Python {platform.python_version()}")


def _prices(config: NavigatorConfig, models: list[str]) -> dict[str, str]:
    table = load_pricing_table(config.pricing_file, endpoints=config.endpoints)
    out = {}
    for model in models:
        rates = table.rates_for(parse_model_spec(model, frozenset(config.all_endpoints())).model)
        out[model] = f"{rates.input} / {rates.output}"
    return out


def _runs(run: EvalRun, outcome: EvalOutcome) -> dict[int, list[NavigatorRun]]:
    by_index = {o.index: o for o in outcome.result.outcomes}
    runs: dict[int, list[NavigatorRun]] = {i: [] for i in range(len(run.tasks))}
    for k, (i, model, budget) in enumerate(run.jobs()):
        o = by_index.get(k)
        status = o.status.value if o else "failed"
        runs[i].append(NavigatorRun(
            model=model, tokens_budget=budget, status=status, context_ref=o.context_ref if o else None,
            seconds=outcome.seconds.get(k, 0.0), cost_usd=(o.spent_micros if o else 0) / 1e6,
            stop_reason=o.stop_reason if o else None,
            error=(o.error if o else "the batch reported no outcome") or (None if status == "completed" else status)))
    return runs


def write_report(config: NavigatorConfig, run: EvalRun, outcome: EvalOutcome, out_dir: Path,
                 store: ArtifactStore) -> ExitCode:
    """Score every task (the packs read from ``store``), write ``eval.json``, ``eval.md`` and ``eval.html``, print
    the headline; exit 1 if any run failed."""
    root = Path(run.checkouts)
    runs = _runs(run, outcome)
    results: list[TaskResult] = []
    for i, task in enumerate(run.tasks):
        results.append(score_task(task, root / run.explore_dir(task), run.budgets, runs[i], store))
    methods = [navigator_method(m) for m in run.models] + [ENGINE, CHUNK_BM25]
    first = run.tasks[0].date[:10] if run.tasks else ""
    report = EvalReport(
        repo=run.repo, head=run.head, since=run.since,
        commit_range=(f"{min(t.date for t in run.tasks)[:10]} … {max(t.date for t in run.tasks)[:10]}"
                      + (f" (HEAD {run.head[:12]})" if run.head else "")) if first else run.head[:12],
        models=run.models, budgets=run.budgets, budget_usd=run.budget_usd,
        spent_usd=float(Decimal(outcome.result.spent_usd)), prices=_prices(config, run.models), machine=_machine(),
        started=run.started, wall_seconds=outcome.wall_seconds, batch_id=run.batch_id, candidates=run.candidates,
        tasks=results, totals=totals(results, methods, run.budgets), cases=run.cases)
    (out_dir / "eval.json").write_text(report.model_dump_json(indent=1), encoding="utf-8")
    (out_dir / "eval.md").write_text(report_markdown(report), encoding="utf-8")
    (out_dir / "eval.html").write_text(report_html(report), encoding="utf-8")
    remove_run_checkouts(run)
    for t in report.totals:
        stdout.print(f"{t.tokens_budget:>7,} tokens · {t.method:<20} recall {t.line_recall:.3f} · file hit "
                     f"{t.file_hit:.3f}" + ("" if t.wins is None else f" · W/T/L {t.wins}/{t.ties}/{t.losses}")
                     + (f" · failed {t.failed}" if t.failed else ""), markup=False)
    stdout.print(f"report: {out_dir / 'eval.md'}", markup=False, soft_wrap=True)
    failed = sum(t.failed for t in report.totals)
    return ExitCode.RUN_FAILED if failed else ExitCode.OK
