"""What ``cli/server.py``'s commands run: ``navigator server``: the embedded Temporal server — in the foreground, in the background, status, stop.

The commands' signatures and help are in :mod:`cli.server` (standard library + typer only,
so their ``--help`` imports nothing of this)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path
from typing import Any

import typer

from durable_navigator.cli.common import config_of, print_json, run_async, stdout
from durable_navigator.cli.config import NavigatorConfig
from durable_navigator.cli.connect import idle_note
from durable_navigator.cli.errors import CliError, ExitCode, TemporalUnreachableError, handles_errors, stderr
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

__all__ = ["describe_record", "STOP_WAIT_S"]


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


@handles_errors
def run_server(
    ctx: typer.Context,
    port: int | None,
    ui_port: int | None,
    ip: str | None,
    db: Path | None,
    headless: bool,
    background: bool,
    idle_timeout: float | None,
    json_out: bool,
) -> None:
    """The ``navigator server server`` command (its options and help: :mod:`cli.server`)."""
    if ctx.invoked_subcommand is not None:
        return
    for name, value in (("--port", port), ("--ui-port", ui_port)):
        # checked here: DevServerConfig's own refusal is a pydantic traceback
        if value is not None and not 0 < value < 65536:
            raise CliError(f"{name} {value} is not a TCP port; pass one from 1 to 65535")
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


@handles_errors
def run_status(
    ctx: typer.Context,
    json_out: bool,
) -> None:
    """The ``navigator server status`` command (its options and help: :mod:`cli.server`)."""
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


@handles_errors
def run_stop(
    ctx: typer.Context,
    all_servers: bool,
    json_out: bool,
) -> None:
    """The ``navigator server stop`` command (its options and help: :mod:`cli.server`)."""
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
