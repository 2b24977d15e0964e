"""``navigator config show``: the effective configuration."""

# Standard library + typer only: ``navigator config --help`` imports this module and nothing
# heavy; the commands' bodies run in :mod:`cli.config_run` (imported when one runs).

from __future__ import annotations

from typing import Annotated

import typer

from durable_navigator.cli.lazy import command_group

__all__ = ["config_app"]

config_app = command_group(no_args_is_help=True)


@config_app.callback()
def config_group() -> None:
    """Inspect the configuration."""


@config_app.command("show")
def config_show(
    ctx: typer.Context,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.", show_default="off")] = False,
) -> None:
    """Print the effective configuration (credentials shown only as set / unset)."""
    from durable_navigator.cli.config_run import run_config_show

    run_config_show(ctx=ctx, json_out=json_out)

