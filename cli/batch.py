"""``navigator batch``: unattended explorations of many repositories × goals under one budget.

``run jobs.yaml`` validates the whole jobs file first (every problem per job,
nothing started), sends each repository as ``explore`` would (a snapshot per distinct
path with an object store, a git URL's commit, else the path), then starts ``BatchWorkflow`` under a deterministic id:
running it again with the same ``--id`` joins the running batch or resumes a
finished one without exploring any job twice. ``status`` / ``results`` /
``stop`` talk to a batch by id from any terminal.
"""

# Standard library + typer only: ``navigator batch --help`` imports this module and nothing
# heavy; the commands' bodies run in :mod:`cli.batch_run` (imported when one runs).

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from durable_navigator.cli.lazy import command_group
from durable_navigator.cli.options import BatchIdArg, JsonOpt, checked_sender, reason_option

__all__ = ["batch_app"]

batch_app = command_group(help="Many repositories × goals under one USD budget.\n\nUnattended explorations, each a child workflow drawing from the shared budget; failures are isolated.", no_args_is_help=True)


@batch_app.command("run")
def run(
    ctx: typer.Context,
    jobs_file: Annotated[Path, typer.Argument(metavar="JOBS_FILE", show_default=False,
                                              help="Jobs YAML: {defaults: {...}, jobs: [{repo, goal, ...}]}; "
                                                   "repo: a path or a git URL (+ ref).")],
    budget_usd: Annotated[str | None, typer.Option("--budget-usd", metavar="USD", help="Total USD of the whole batch.",
                                                   show_default="total_budget_usd of the jobs file")] = None,
    concurrency: Annotated[int | None, typer.Option("--concurrency", metavar="N", min=1, max=256, help="Jobs at once.",
                                                    show_default="max_concurrency of the jobs file, else 4")] = None,
    batch_id: Annotated[str | None, typer.Option("--id", metavar="ID", help="Batch id; re-use it to resume a batch.",
                                                 show_default="batch-<file>-<random>")] = None,
    out: Annotated[Path | None, typer.Option("--out", metavar="DIR", help="Output folder.",
                                             show_default="defaults.out_dir in navigator.yaml: ./navigator-out")] = None,
    detach: Annotated[bool, typer.Option("--detach", help="Start on a running server and return at once.",
                                         show_default="off: follow it here")] = False,
    check_repos: Annotated[bool, typer.Option("--check-repos/--no-check-repos",
                                              help="Refuse jobs whose repository folder is missing here "
                                                   "(always with an object store: the batch uploads each one).")] = True,
    json_out: JsonOpt = False,
) -> None:
    """Run every job of JOBS_FILE as a child exploration.

    One budget for all jobs, failures isolated; the file is validated first (every
    problem at once) and nothing starts until it is clean.
    """
    from durable_navigator.cli.batch_run import run_run

    run_run(ctx=ctx, jobs_file=jobs_file, budget_usd=budget_usd, concurrency=concurrency, batch_id=batch_id, out=out, detach=detach, check_repos=check_repos, json_out=json_out)


@batch_app.command("status")
def status(ctx: typer.Context, batch_id: BatchIdArg, json_out: JsonOpt = False) -> None:
    """Counts, budget and the latest finished jobs of a batch."""
    from durable_navigator.cli.batch_run import run_status

    run_status(ctx=ctx, batch_id=batch_id, json_out=json_out)


@batch_app.command("results")
def results(
    ctx: typer.Context,
    batch_id: BatchIdArg,
    wait: Annotated[bool, typer.Option("--wait", help="Wait for a running batch to finish.", show_default="off")] = False,
    json_out: JsonOpt = False,
) -> None:
    """The per-job results of a batch: cost, iterations, stop reason, context pack."""
    from durable_navigator.cli.batch_run import run_results

    run_results(ctx=ctx, batch_id=batch_id, wait=wait, json_out=json_out)


@batch_app.command("ls")
def list_batches(
    ctx: typer.Context,
    limit: Annotated[int, typer.Option("--limit", metavar="N", min=1, max=1000, help="At most this many batches.")] = 20,
    json_out: JsonOpt = False,
) -> None:
    """List batches, newest first."""
    from durable_navigator.cli.batch_run import run_list_batches

    run_list_batches(ctx=ctx, limit=limit, json_out=json_out)


@batch_app.command("stop")
def stop(
    ctx: typer.Context,
    batch_id: BatchIdArg,
    reason: Annotated[str, reason_option("Why (shown in progress and results).")] = "stopped by user",
    sender: Annotated[str, typer.Option("--sender", metavar="NAME", help="Who stops it.", envvar="USER",
                                        callback=checked_sender)] = "cli",
) -> None:
    """Start no more jobs; running explorations finalize their best map so far."""
    from durable_navigator.cli.batch_run import run_stop

    run_stop(ctx=ctx, batch_id=batch_id, reason=reason, sender=sender)

