"""Long-running commands: ``navigator server`` (embedded Temporal) and ``navigator worker``."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Annotated

import typer

from durable_navigator.cli.common import cancel_and_wait, config_of, print_json, run_async, stdout
from durable_navigator.cli.connect import open_session
from durable_navigator.cli.errors import ExitCode, handles_errors, stderr
from durable_navigator.cli.health import HealthState, monitor_frontend, serve_health
from durable_navigator.workers.devserver import SEARCH_ATTRIBUTES, DevServer, DevServerConfig, default_state_dir
from durable_navigator.workers.logging import bind_ids, configure_logging, get_logger

__all__ = ["serve_app", "FRONTEND_CHECK_INTERVAL_S"]

serve_app = typer.Typer(help="Run the embedded server and workers.")

#: how often a worker re-checks the frontend for its readiness probe
FRONTEND_CHECK_INTERVAL_S = 10.0

log = get_logger(__name__)


def _stop_event() -> asyncio.Event:
    """An event set by SIGTERM or SIGINT (graceful shutdown for both)."""
    event = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, event.set)
    return event


@serve_app.command()
@handles_errors
def server(
    ctx: typer.Context,
    port: Annotated[int | None, typer.Option("--port", help="gRPC port (default 7233).")] = None,
    ui_port: Annotated[int | None, typer.Option("--ui-port", help="Web UI port (default 8233).")] = None,
    ip: Annotated[str | None, typer.Option("--ip", help="Address to bind (default 127.0.0.1).")] = None,
    db: Annotated[Path | None, typer.Option("--db", help="SQLite file (default: user state dir).")] = None,
    headless: Annotated[bool, typer.Option("--headless", help="No Web UI.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print the addresses as one JSON line.")] = False,
) -> None:
    """Run the embedded Temporal dev server (persistent, Web UI on) until Ctrl-C."""
    emb = config_of(ctx).embedded
    cfg = DevServerConfig(
        ip=ip or emb.ip,
        port=port or emb.port,
        ui_port=ui_port or emb.ui_port,
        db_filename=db or emb.db_filename,
        headless=headless,
    )
    log_path = default_state_dir() / "temporal-server.log"
    run_async(_serve(DevServer(cfg, log_path=log_path), json_out))


async def _serve(dev: DevServer, json_out: bool) -> None:
    stop = _stop_event()
    dev.start()
    try:
        await dev.wait_ready()
        info = {
            "grpc": dev.address,
            "ui": None if dev.config.headless else dev.ui_url,
            "namespace": dev.config.namespace,
            "db": str(dev.config.db_filename),
            "log": str(dev.log_path),
            "search_attributes": SEARCH_ATTRIBUTES,
            "pid": dev.pid,
        }
        if json_out:
            print_json(info)
        else:
            stdout.print(f"Temporal gRPC: [bold]{dev.address}[/bold]  (namespace {dev.config.namespace})")
            if info["ui"]:
                stdout.print(f"Web UI:        [bold]{info['ui']}[/bold]")
            stdout.print(f"database:      {info['db']}\nserver log:    {info['log']}", markup=False)
            stdout.print("search attributes: " + ", ".join(f"{k} ({v})" for k, v in SEARCH_ATTRIBUTES.items()))
            stdout.print("Ctrl-C to stop.")
        exited = asyncio.create_task(asyncio.to_thread(dev.wait))
        waiter = asyncio.create_task(stop.wait())
        await asyncio.wait({exited, waiter}, return_when=asyncio.FIRST_COMPLETED)
        if exited.done():
            raise typer.Exit(int(ExitCode.TEMPORAL_UNREACHABLE))
        waiter.cancel()
    finally:
        code = await asyncio.to_thread(dev.stop)
        stderr.print(f"embedded Temporal stopped (exit {code})")


@serve_app.command()
@handles_errors
def worker(
    ctx: typer.Context,
    max_concurrent_activities: Annotated[
        int | None, typer.Option("--max-concurrent-activities", min=1, help="Activity slots (default from config).")
    ] = None,
    health_port: Annotated[
        int | None,
        typer.Option("--health-port", min=1, max=65535, help="Serve /healthz and /readyz on this port.",
                     envvar="NAVIGATOR_HEALTH_PORT"),
    ] = None,
    health_host: Annotated[str, typer.Option("--health-host", help="Bind address of the health port.")] = "0.0.0.0",
) -> None:
    """Run a navigator worker until SIGTERM / Ctrl-C (then stop polling and shut down cleanly)."""
    config = config_of(ctx)
    opts = ctx.find_root().obj
    # a worker is a service: its own level (info by default) and JSON if configured
    configure_logging(
        json_output=opts.log_json if opts.log_json is not None else config.log.json_output,
        level=opts.log_level or config.log.level,
        force=True,
    )
    slots = max_concurrent_activities or config.worker.max_concurrent_activities
    run_async(_work(ctx, slots, health_port, health_host))


async def _work(ctx: typer.Context, slots: int, health_port: int | None, health_host: str) -> None:
    from durable_navigator.workers.worker import build_worker

    config = config_of(ctx)
    stop = _stop_event()
    state = HealthState(task_queue=config.temporal.task_queue)
    async with open_session(config, allow_embedded=False, in_process_worker=False) as session:
        bind_ids(task_queue=session.task_queue, namespace=session.namespace)
        worker = build_worker(session.client, task_queue=session.task_queue, max_concurrent_activities=slots,
                              endpoints=config.endpoints, pricing_file=config.pricing_file)
        monitor = asyncio.create_task(
            monitor_frontend(state, session.client.service_client.check_health, FRONTEND_CHECK_INTERVAL_S)
        )
        health = serve_health(state, health_host, health_port) if health_port else None
        try:
            if health is not None:
                await health.__aenter__()
            async with worker:
                state.worker_running = True
                log.info("worker polling", address=session.address, slots=slots, health_port=health_port)
                stderr.print(f"worker polling {session.task_queue!r} on {session.address}; SIGTERM/Ctrl-C to stop")
                await stop.wait()
                stderr.print("shutting down: no new tasks; interrupted activities are retried by Temporal")
                state.worker_running = False
        finally:
            # a frontend check still in flight is awaited, not left to the SDK's threads at exit
            await cancel_and_wait(monitor)
            if health is not None:
                await health.__aexit__(None, None, None)
    stderr.print("worker stopped")
