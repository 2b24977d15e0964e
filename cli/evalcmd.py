"""``navigator eval REPO``: how good is the context on this repository, with this model?

Standard library + typer only (``navigator eval --help`` imports nothing heavy); the command's body
runs in :mod:`cli.eval_run`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from durable_navigator.cli.lazy import command_group

__all__ = ["eval_app"]

eval_app = command_group(help="Score the navigator on REPO's own history.")


@eval_app.command("eval")
def eval_command(
    ctx: typer.Context,
    repo: Annotated[Path, typer.Argument(metavar="REPO", help="Git repository whose history is mined.",
                                         show_default=False)],
    tasks: Annotated[int, typer.Option("--tasks", metavar="N", min=1, max=1000,
                                       help="Tasks to mine, spread over the history.")] = 20,
    since: Annotated[str | None, typer.Option("--since", metavar="DATE",
                                              help="Only commits after DATE (git's --since: 2024-01-01, '1 year').",
                                              show_default="the whole history")] = None,
    tokens: Annotated[list[int] | None, typer.Option("--tokens", metavar="N", help="Token budget (repeatable).",
                                                     show_default="defaults.token_budget in navigator.yaml: 8192")] = None,
    model: Annotated[list[str] | None, typer.Option("--model", metavar="MODEL", help="Model (repeatable).",
                                                    show_default="offline")] = None,
    budget_usd: Annotated[str, typer.Option("--budget-usd", metavar="USD",
                                            help="One USD cap for the whole eval.")] = "1.00",
    out: Annotated[Path | None, typer.Option("--out", metavar="DIR", help="Report folder.",
                                             show_default="<defaults.out_dir>/eval-<repo name>")] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Continue the eval in --out (nothing runs twice).",
                                         show_default="off")] = False,
    concurrency: Annotated[int, typer.Option("--concurrency", metavar="N", min=1, max=64,
                                             help="Explorations at once.")] = 2,
) -> None:
    """Mine REPO's commits into tasks, explore each at its parent commit, and score the packs.

    Goal = a commit's message with the changed paths removed; gold = the lines it changed. The
    navigator (each --model) runs as one durable batch under one USD cap; the engine alone and
    chunk BM25 are scored on the same checkouts. Writes eval.json and eval.md to --out.
    """
    from durable_navigator.cli.eval_run import run_eval

    run_eval(ctx=ctx, repo=repo, tasks=tasks, since=since, tokens=tokens or [], models=model or [],
             budget_usd=budget_usd, out=out, resume=resume, concurrency=concurrency)
