"""``navigator server``: the embedded Temporal server — in the foreground, in the background, status, stop.

Every server this command (or ``explore``) starts is recorded (:mod:`workers.servers`),
so the other commands of the same user find it whatever its ports: ``navigator
server --port 7300`` in one terminal, ``navigator ls`` in another.
"""

# Standard library + typer only: ``navigator server --help`` imports this module and nothing
# heavy; the commands' bodies run in :mod:`cli.server_run` (imported when one runs).

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from durable_navigator.cli.lazy import command_group
from durable_navigator.cli.options import JsonOpt

__all__ = ["server_app"]

server_app = command_group()


@server_app.callback(invoke_without_command=True)
def server(
    ctx: typer.Context,
    port: Annotated[int | None, typer.Option("--port", metavar="PORT", help="gRPC port.",
                                             show_default="embedded.port in navigator.yaml: 7233")] = None,
    ui_port: Annotated[int | None, typer.Option("--ui-port", metavar="PORT", help="Web UI port.",
                                                show_default="embedded.ui_port in navigator.yaml: 8233")] = None,
    ip: Annotated[str | None, typer.Option("--ip", metavar="ADDRESS", help="Address to bind.",
                                           show_default="embedded.ip in navigator.yaml: 127.0.0.1")] = None,
    db: Annotated[Path | None, typer.Option("--db", metavar="FILE", help="SQLite file.",
                                            show_default="embedded.db_filename: user state dir")] = None,
    headless: Annotated[bool, typer.Option("--headless", help="No Web UI.", show_default="off")] = False,
    background: Annotated[
        bool, typer.Option("--background", help="Start it in the background and return (stops when idle).",
                           show_default="off: in the foreground until Ctrl-C")
    ] = False,
    idle_timeout: Annotated[
        float | None,
        typer.Option("--idle-timeout", metavar="SECONDS", min=1,
                     help="With --background: stop after this long with no worker and no navigator command.",
                     show_default="embedded.idle_timeout_s in navigator.yaml: 1800"),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the addresses as JSON.", show_default="off")] = False,
) -> None:
    """Run the embedded Temporal server; status; stop.

    Without a subcommand: the embedded Temporal dev server (persistent SQLite database,
    Web UI on, the navigator's search attributes registered), in the foreground until
    Ctrl-C, or with --background until it is idle. Commands of the same user that use
    the same database find it, whatever its ports. `navigator server status` lists
    the servers this tool started; `navigator server stop` stops one.
    """
    if ctx.invoked_subcommand is not None:
        return
    from durable_navigator.cli.server_run import run_server

    run_server(ctx=ctx, port=port, ui_port=ui_port, ip=ip, db=db, headless=headless, background=background, idle_timeout=idle_timeout, json_out=json_out)


@server_app.command("status")
def status(ctx: typer.Context, json_out: JsonOpt = False) -> None:
    """The servers this tool started, with their addresses.

    Each: foreground or background, pid, gRPC address, Web UI, database, uptime and (background)
    when it was last used and when it stops. Exit code 3 when none runs.
    """
    from durable_navigator.cli.server_run import run_status

    run_status(ctx=ctx, json_out=json_out)


@server_app.command("stop")
def stop(
    ctx: typer.Context,
    all_servers: Annotated[bool, typer.Option("--all", help="Stop every navigator server of this user.",
                                              show_default="off: the one serving the configured database")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Stop the server of the configured database.

    Only a server this tool started and recorded (checked by pid and process start time);
    its runs stay in its database.
    """
    from durable_navigator.cli.server_run import run_stop

    run_stop(ctx=ctx, all_servers=all_servers, json_out=json_out)

