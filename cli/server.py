"""``navigator server``: the embedded Temporal server — in the foreground, in the background, status, stop.

Every server this command (or ``explore``) starts is recorded (:mod:`workers.servers`),
so the other commands of the same user find it whatever its ports: ``navigator
server --port 7300`` in one terminal, ``navigator ls`` in another.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from durable_navigator.cli.common import JsonOpt, config_of, print_json, run_async, stdout
from durable_navigator.cli.config import NavigatorConfig
from durable_navigator.cli.connect import idle_note
from durable_navigator.cli.errors import CliError, ExitCode, TemporalUnreachableError, handles_errors, stderr
from durable_navigator.cli.lazy import command_group
from durable_navigator.cli.serve import stop_event
from durable_navigator.workers.background import BackgroundOptions, start_background
from durable_navigator.workers.devserver import SEARCH_ATTRIBUTES, DevServer, DevServerConfig, default_state_dir
from durable_navigator.workers.servers import (
    ServerRecord,
    find_record,
    last_used,
    live_records,
    process_alive,
    process_start_time,
    remove_record,
    uptime_text,
    write_record,
)

__all__ = ["server_app", "describe_record", "STOP_WAIT_S"]

server_app = command_group()

#: how long `server stop` waits for a server to shut down cleanly
STOP_WAIT_S = 30.0


def describe_record(record: ServerRecord, config: NavigatorConfig | None = None) -> list[str]:
    """Human lines for one running server."""
    ui = record.ui or "no Web UI (headless)"
    lines = [f"{record.mode} server · pid {record.pid} · gRPC {record.grpc} · Web UI {ui}",
             f"  database {record.db or '(in memory)'} · up {uptime_text(record)}"]
    if record.mode == "background":
        idle = max(0, int((time.time() - last_used(record)) // 60))
        lines[-1] += f" · last used {idle} min ago"
        lines.append(f"  {idle_note(record)}")
    if config is not None and record.db and Path(record.db).resolve() == config.embedded.db_filename.resolve():
        lines[0] += "  ← this configuration"
    return lines


def _record_json(record: ServerRecord) -> dict[str, Any]:
    return {**record.model_dump(mode="json"), "last_used": last_used(record)}


@server_app.callback(invoke_without_command=True)
@handles_errors
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
    config = config_of(ctx)
    emb = config.embedded
    cfg = DevServerConfig(
        ip=ip or emb.ip,
        port=port or emb.port,
        ui_port=ui_port or emb.ui_port,
        db_filename=db or emb.db_filename,
        headless=headless,
        startup_timeout_s=emb.startup_timeout_s,
    )
    running = find_record(cfg.db_filename)
    if running is not None:
        raise CliError(f"a navigator server already serves {cfg.db_filename} ({running.mode}, pid {running.pid}, "
                       f"gRPC {running.grpc}); use it, or stop it first with `navigator server stop`")
    if background:
        options = BackgroundOptions(server=cfg, task_queue=config.temporal.task_queue,
                                    idle_timeout_s=idle_timeout or emb.idle_timeout_s or 1800.0,
                                    state_dir=default_state_dir())
        record = start_background(options)
        if json_out:
            print_json(_record_json(record))
        else:
            stdout.print("\n".join(describe_record(record)), markup=False, soft_wrap=True)
        return
    run_async(_serve(DevServer(cfg, log_path=default_state_dir() / "temporal-server.log"), config, json_out))


async def _serve(dev: DevServer, config: NavigatorConfig, json_out: bool) -> None:
    stop = stop_event()
    dev.start()
    record: ServerRecord | None = None
    try:
        await dev.wait_ready()
        record = ServerRecord(
            pid=os.getpid(), pid_start=process_start_time(os.getpid()), server_pid=dev.pid, mode="foreground",
            grpc=dev.address, ui=None if dev.config.headless else dev.ui_url, namespace=dev.config.namespace,
            db=str(dev.config.db_filename) if dev.config.db_filename else None, log=str(dev.log_path),
            uid=os.getuid(), started_at=time.time(),
        )
        write_record(record)
        _announce(dev, record, config, json_out)
        exited = asyncio.create_task(asyncio.to_thread(dev.wait))
        waiter = asyncio.create_task(stop.wait())
        await asyncio.wait({exited, waiter}, return_when=asyncio.FIRST_COMPLETED)
        if exited.done():
            raise typer.Exit(int(ExitCode.TEMPORAL_UNREACHABLE))
        waiter.cancel()
    finally:
        if record is not None:
            remove_record(record)
        code = await asyncio.to_thread(dev.stop)
        stderr.print(f"embedded Temporal stopped (exit {code})")


def _announce(dev: DevServer, record: ServerRecord, config: NavigatorConfig, json_out: bool) -> None:
    info = {
        "grpc": dev.address,
        "ui": record.ui,
        "namespace": dev.config.namespace,
        "db": record.db,
        "log": str(dev.log_path),
        "search_attributes": SEARCH_ATTRIBUTES,
        "pid": dev.pid,
        "export": _export_line(record),
    }
    if json_out:
        print_json(info)
        return
    stdout.print(f"Temporal gRPC: [bold]{dev.address}[/bold]  (namespace {dev.config.namespace})")
    if record.ui:
        stdout.print(f"Web UI:        {record.ui}", markup=False, soft_wrap=True)
    stdout.print(f"database:      {record.db}\nserver log:    {dev.log_path}", markup=False, soft_wrap=True)
    stdout.print("search attributes: " + ", ".join(f"{k} ({v})" for k, v in SEARCH_ATTRIBUTES.items()))
    same_db = record.db and Path(record.db).resolve() == config.embedded.db_filename.resolve()
    who = ("navigator commands of this user find this server (it serves the configured database)" if same_db
           else f"navigator commands find this server when their embedded.db_filename is {record.db}")
    stdout.print(f"Other terminals: {who}.", markup=False)
    stdout.print(f"Elsewhere: {_export_line(record)} (runs then need a `navigator worker`)",
                 markup=False)
    stdout.print("Ctrl-C to stop.")


def _export_line(record: ServerRecord) -> str:
    line = f"export TEMPORAL_ADDRESS={record.grpc}"
    return f"{line} TEMPORAL_UI_URL={record.ui}" if record.ui else line


@server_app.command("status")
@handles_errors
def status(ctx: typer.Context, json_out: JsonOpt = False) -> None:
    """The servers this tool started, with their addresses.

    Each: foreground or background, pid, gRPC address, Web UI, database, uptime and (background)
    when it was last used and when it stops. Exit code 3 when none runs.
    """
    config = config_of(ctx)
    records = live_records()
    if json_out:
        print_json([_record_json(r) for r in records])
    elif records:
        for record in records:
            stdout.print("\n".join(describe_record(record, config)), markup=False, soft_wrap=True)
    if not records:
        if not json_out:
            stderr.print("no navigator server is running; `navigator explore` starts one in the background, "
                         "`navigator server` runs one in the foreground", markup=False)
        raise typer.Exit(int(ExitCode.TEMPORAL_UNREACHABLE))


@server_app.command("stop")
@handles_errors
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
    config = config_of(ctx)
    if all_servers:
        targets = live_records()
    else:
        found = find_record(config.embedded.db_filename)
        targets = [found] if found is not None else []
    stopped = [_stop_one(record) for record in targets]
    if json_out:
        print_json({"stopped": [r.model_dump(mode="json") for r in stopped]})
        return
    if not stopped:
        stdout.print(f"no navigator server runs for {config.embedded.db_filename}; nothing to stop", markup=False)
    for record in stopped:
        stdout.print(f"stopped the {record.mode} server on {record.grpc} (pid {record.pid}); its database keeps "
                     "every run", markup=False)


def _stop_one(record: ServerRecord) -> ServerRecord:
    """SIGTERM (background) / SIGINT (foreground, like Ctrl-C) the recorded process and wait for it."""
    if not process_alive(record.pid, record.pid_start):
        remove_record(record)
        return record
    os.kill(record.pid, signal.SIGINT if record.mode == "foreground" else signal.SIGTERM)
    deadline = time.monotonic() + STOP_WAIT_S
    while process_alive(record.pid, record.pid_start):
        if time.monotonic() > deadline:
            raise TemporalUnreachableError(
                f"the server (pid {record.pid}) did not stop within {STOP_WAIT_S:.0f}s; see {record.log}")
        time.sleep(0.1)
    return record
