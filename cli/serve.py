"""``navigator worker``: a long-running worker (``navigator server`` lives in :mod:`cli.server`)."""

from __future__ import annotations

import asyncio
import logging
import signal

import typer
from temporalio import activity as temporal_activity
from temporalio import workflow as temporal_workflow

from durable_navigator.cli.common import cancel_and_wait, config_of, run_async
from durable_navigator.cli.connect import open_session
from durable_navigator.cli.errors import handles_errors, stderr
from durable_navigator.cli.health import HealthState, monitor_frontend, serve_health
from durable_navigator.cli.stores import open_artifact_store, store_description
from durable_navigator.workers.logging import bind_ids, configure_logging, get_logger

__all__ = ["stop_event", "FRONTEND_CHECK_INTERVAL_S"]

# worker_app and its commands' signatures and help: cli/signatures.py

#: how often a worker re-checks the frontend for its readiness probe
FRONTEND_CHECK_INTERVAL_S = 10.0

log = get_logger(__name__)


def stop_event() -> asyncio.Event:
    """An event set by SIGTERM or SIGINT (graceful shutdown for both)."""
    event = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, event.set)
    return event


@handles_errors
def run_worker(
    ctx: typer.Context,
    max_concurrent_activities: int | None,
    health_port: int | None,
    health_host: str,
) -> None:
    """The ``navigator worker`` command (its options and help: :mod:`cli.signatures`)."""
    config = config_of(ctx)
    opts = ctx.find_root().obj
    # a worker is a service: its own level (info by default) and JSON if configured
    configure_logging(
        json_output=opts.log_json if opts.log_json is not None else config.log.json_output,
        level=opts.log_level or config.log.level,
        force=True,
    )
    # config_of quiets the SDK's loggers for commands; a worker's operator needs them — the
    # run started / finished / failed lines (workers/runlog.py) go through temporalio.workflow
    logging.getLogger("temporalio").setLevel(logging.NOTSET)
    # the ids are structured fields already (workers/logging.py): not a dict repeated in every message
    temporal_workflow.logger.workflow_info_on_message = False
    temporal_activity.logger.activity_info_on_message = False
    slots = max_concurrent_activities or config.worker.max_concurrent_activities
    run_async(_work(ctx, slots, health_port, health_host))


async def _work(ctx: typer.Context, slots: int, health_port: int | None, health_host: str) -> None:
    from durable_navigator.workers.worker import build_activities, build_check_worker, build_host_worker, build_worker

    config = config_of(ctx)
    # a bad artifacts: section (or a bucket that does not answer) stops the worker before it polls
    store = await asyncio.to_thread(open_artifact_store, config)
    stop = stop_event()
    state = HealthState(task_queue=config.temporal.task_queue)
    async with open_session(config, allow_embedded=False, in_process_worker=False) as session:
        bind_ids(task_queue=session.task_queue, namespace=session.namespace)
        acts = build_activities(endpoints=config.endpoints, pricing_file=config.pricing_file, store=store)
        worker = build_worker(session.client, task_queue=session.task_queue, max_concurrent_activities=slots,
                              activities=acts)
        # the CLI's model check can ask this worker by name (cli/preflight.py)
        check_worker = build_check_worker(session.client, session.task_queue, acts)
        # this host's own queue: a run's renders and code tools follow its scan here (warm index)
        host_worker = build_host_worker(session.client, session.task_queue, acts, slots)
        monitor = asyncio.create_task(
            monitor_frontend(state, session.client.service_client.check_health, FRONTEND_CHECK_INTERVAL_S)
        )
        health = serve_health(state, health_host, health_port) if health_port else None
        try:
            if health is not None:
                await health.__aenter__()
            async with worker, check_worker, host_worker:
                state.worker_running = True
                log.info("worker polling", address=session.address, slots=slots, health_port=health_port,
                         artifacts=store_description(config))
                stderr.print(f"worker polling {session.task_queue!r} on {session.address} (artifacts: "
                             f"{store_description(config)}); SIGTERM/Ctrl-C to stop", markup=False)
                await stop.wait()
                stderr.print("shutting down: no new tasks; interrupted activities are retried by Temporal")
                state.worker_running = False
        finally:
            # a frontend check still in flight is awaited, not left to the SDK's threads at exit
            await cancel_and_wait(monitor)
            if health is not None:
                await health.__aexit__(None, None, None)
    stderr.print("worker stopped")
