"""``navigator export ID``'s signature and help (standard library + typer only; the body: :mod:`cli.export_run`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from durable_navigator.cli.lazy import command_group
from durable_navigator.cli.options import JsonOpt, WorkflowIdArg

__all__ = ["export_app"]

export_app = command_group(help="Turn finished runs into fixtures.")


@export_app.command()
def export(
    ctx: typer.Context,
    workflow_id: WorkflowIdArg,
    out: Annotated[Path | None, typer.Option("--out", metavar="DIR", help="The case folder to create.",
                                             show_default="<defaults.out_dir>/cases/<WORKFLOW_ID>")] = None,
    gold: Annotated[list[str] | None, typer.Option("--gold", metavar="PATH",
                                                   help="A file that is right for the goal (repeatable; "
                                                        "repository-relative).",
                                                   show_default="the files the pack shows in full")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Save a finished run as a replay fixture and quality case.

    The folder holds history/<id>.json (the run's event history, every run of a continued chain: drop
    it into tests/histories/exported/ and the replay test replays it), context.md (the pack) and
    case.json (goal, repository, the commit it ran at, the right files) that `navigator eval --cases`
    re-scores.
    """
    from durable_navigator.cli.export_run import run_export

    run_export(ctx=ctx, workflow_id=workflow_id, out=out, gold=gold or [], json_out=json_out)
