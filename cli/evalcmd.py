"""``navigator eval REPO`` / ``navigator eval compare A B``: how good is the context on this repository?

``eval REPO`` is the group's default command (``eval run REPO`` spelled out); ``compare`` puts two
reports side by side. Standard library + typer only (``navigator eval --help`` imports nothing
heavy); the bodies run in :mod:`cli.eval_run` and :mod:`cli.eval_compare`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from typer.core import TyperGroup

from durable_navigator.cli.lazy import command_group

__all__ = ["eval_app", "EvalGroup"]


class EvalGroup(TyperGroup):
    """``eval`` with a default command: ``navigator eval REPO …`` runs ``eval run REPO …``."""

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:
        """Insert ``run`` unless the first word names a subcommand (or asks for the group's help): ``eval REPO …``
    and ``eval --cases DIR …`` both run."""
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


eval_app = command_group(cls=EvalGroup, no_args_is_help=True,
                         help="Score the context on REPO's own history (eval.md).\n\n"
                              "`navigator eval REPO` runs an eval (`eval run`); `eval compare A B` compares two.")


@eval_app.command("run")
def eval_command(
    ctx: typer.Context,
    repo: Annotated[Path | None, typer.Argument(metavar="REPO", help="Git repository whose history is mined.",
                                                show_default=False)] = None,
    tasks: Annotated[int | None, typer.Option("--tasks", metavar="N", min=1, max=1000,
                                              help="Tasks to mine, spread over the history.",
                                              show_default="20")] = None,
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
    cases: Annotated[Path | None, typer.Option("--cases", metavar="DIR",
                                               help="Re-score the quality cases `navigator export` wrote under DIR "
                                                    "instead of mining REPO.", show_default="off: mine REPO")] = None,
) -> None:
    """Mine REPO's commits into tasks, explore each at its parent commit, and score the packs.

    Goal = a commit's message with the changed paths removed; gold = the lines it changed. The
    navigator (each --model) runs as one durable batch under one USD cap; the engine alone and
    chunk BM25 are scored on the same checkouts. Writes eval.json, eval.md and eval.html to --out.

    With --cases DIR (no REPO): every case.json under DIR (`navigator export`) is a task, explored at
    the commit its run saw; gold = every line of the files the case marks right.
    """
    from durable_navigator.cli.eval_run import run_eval

    run_eval(ctx=ctx, repo=repo, tasks=tasks, since=since, tokens=tokens or [], models=model or [],
             budget_usd=budget_usd, out=out, resume=resume, concurrency=concurrency, cases=cases)


@eval_app.command("compare")
def compare_command(
    report_a: Annotated[Path, typer.Argument(metavar="A", help="eval.json (or its folder): the reference.",
                                             show_default=False)],
    report_b: Annotated[Path, typer.Argument(metavar="B", help="eval.json (or its folder): compared with A.",
                                             show_default=False)],
    json_out: Annotated[bool, typer.Option("--json", help="Print the rows as JSON.", show_default="off")] = False,
) -> None:
    """Compare two eval reports: recall, file hit and cost per method and budget, B against A."""
    from durable_navigator.cli.eval_compare import run_compare

    run_compare(report_a=report_a, report_b=report_b, json_out=json_out)
