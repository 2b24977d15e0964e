"""The background Temporal server: outlives the ``explore`` that started it, stops when idle.

``explore`` on a machine with no server starts this supervisor as a detached
process (``python -m durable_navigator.workers.background …``, its own session,
output to a log file). It runs the embedded dev server as its child, writes its
record (:mod:`workers.servers`) once the frontend answers, and then checks every
:data:`CHECK_EVERY_S` whether the server is in use:

* a worker polls the navigator task queue (an ``explore`` following its run, a
  ``navigator worker``), or
* a navigator command used the server (it touches the record), or it just started.

After ``idle_timeout_s`` without either it stops the server (SIGINT, so SQLite is
closed cleanly) and removes its record; so does SIGTERM / SIGINT
(``navigator server stop``, or the command that gave up waiting for the record), at any
time, also while the server is still starting.
The database persists: the next command that needs a server starts a new one on
the same file, with every run still there.

The idle watcher lives here, in the detached supervisor, never in the command that
started it: a command killed at any point (even with SIGKILL, even before the
server answered) leaves a server that still stops when idle. The ``temporal``
child dies with the supervisor (:func:`workers.devserver.with_lifeline`), so a
killed supervisor never leaves a server running without its watcher.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from durable_navigator.workers.devserver import DevServer, DevServerConfig, DevServerError, default_state_dir
from durable_navigator.workers.servers import (
    ServerRecord,
    last_used,
    live_records,
    process_alive,
    process_start_time,
    remove_record,
    write_record,
)

__all__ = ["BackgroundOptions", "start_background", "main", "CHECK_EVERY_S", "POLLER_RECENT_S"]

#: how often the supervisor checks for use
CHECK_EVERY_S = 15.0
#: what ``start_background`` allows the supervisor on top of the server's startup timeout
#: (a Python interpreter importing the Temporal SDK on a loaded machine)
SUPERVISOR_START_S = 30.0
#: the longest one use check may take
CHECK_TIMEOUT_S = 10.0
#: a poller seen this recently means a worker is attached (long polls last about a minute)
POLLER_RECENT_S = 90.0
MODULE = "durable_navigator.workers.background"


@dataclass(frozen=True)
class BackgroundOptions:
    """What the background server runs with."""

    server: DevServerConfig
    task_queue: str
    idle_timeout_s: float
    state_dir: Path

    def argv(self) -> list[str]:
        """The supervisor's command line."""
        cfg = self.server
        args = [sys.executable, "-m", MODULE, "--ip", cfg.ip, "--port", str(cfg.port), "--ui-port",
                str(cfg.ui_port), "--namespace", cfg.namespace, "--task-queue", self.task_queue,
                "--idle-timeout", str(self.idle_timeout_s), "--state-dir", str(self.state_dir),
                "--startup-timeout", str(cfg.startup_timeout_s)]
        if cfg.db_filename is not None:
            args += ["--db", str(cfg.db_filename)]
        return args


def start_background(options: BackgroundOptions, timeout_s: float | None = None) -> ServerRecord:
    """Start the supervisor detached and wait for its record; ``DevServerError`` if it fails."""
    log_path = options.state_dir / f"background-{options.server.port}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(  # noqa: S603 - our own interpreter and module, no shell
            options.argv(), stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
        )
    # the supervisor bounds its own wait by startup_timeout_s; its interpreter start comes on top
    limit = timeout_s or options.server.startup_timeout_s + SUPERVISOR_START_S
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        for record in live_records(options.state_dir):
            if record.pid == proc.pid:
                return record
        if proc.poll() is not None:
            tail = _tail(log_path)
            raise DevServerError(f"the background Temporal server exited with code {proc.returncode}"
                                 f"{f' ({tail})' if tail else ''}; see {log_path}")
        time.sleep(0.1)
    proc.terminate()  # the supervisor stops its server on SIGTERM, also while it is starting
    try:
        proc.wait(timeout=options.server.shutdown_timeout_s + 5)
    except subprocess.TimeoutExpired:
        proc.kill()  # its server gets SIGTERM from the kernel (lifeline)
        proc.wait()
    raise DevServerError(f"the background Temporal server did not start within {limit:.0f}s (see {log_path}); on a "
                         "busy machine retry or raise embedded.startup_timeout_s, or run `navigator server` yourself")


def _tail(path: Path) -> str:
    try:
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1][:200] if lines else ""


async def _worker_attached(client: object, namespace: str, task_queue: str) -> bool:
    """Whether a worker polled ``task_queue`` within :data:`POLLER_RECENT_S`."""
    from temporalio.api.enums.v1 import TaskQueueType
    from temporalio.api.taskqueue.v1 import TaskQueue
    from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest

    reply = await client.workflow_service.describe_task_queue(  # type: ignore[attr-defined]
        DescribeTaskQueueRequest(namespace=namespace, task_queue=TaskQueue(name=task_queue),
                                 task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW),
        timeout=timedelta(seconds=CHECK_TIMEOUT_S))
    now = time.time()
    return any(now - p.last_access_time.ToSeconds() < POLLER_RECENT_S for p in reply.pollers)


async def supervise(options: BackgroundOptions) -> int:
    """Run the server until idle or told to stop; the process's exit code."""
    from temporalio.client import Client

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    server = DevServer(options.server, log_path=options.state_dir / "temporal-server.log")
    server.start()  # on this (the main) thread: the server's lifeline is tied to it
    record: ServerRecord | None = None
    try:
        # a stop request (`navigator server stop`, or the command that gave up waiting) counts while starting too
        ready = asyncio.ensure_future(server.wait_ready())
        stopping = asyncio.ensure_future(stop.wait())
        await asyncio.wait({ready, stopping}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if not ready.done():
            ready.cancel()
            await asyncio.gather(ready, return_exceptions=True)
            print("stop requested while starting: stopping", flush=True)
            return 0
        ready.result()
        record = ServerRecord(
            pid=os.getpid(), pid_start=process_start_time(os.getpid()), server_pid=server.pid, mode="background",
            grpc=server.address, ui=None if options.server.headless else server.ui_url,
            namespace=options.server.namespace,
            db=str(options.server.db_filename) if options.server.db_filename else None,
            log=str(server.log_path), uid=os.getuid(), started_at=time.time(),
            idle_timeout_s=options.idle_timeout_s,
        )
        write_record(record, options.state_dir)
        client: Client | None = None
        busy_at = time.time()
        print(f"background Temporal on {server.address} (pid {os.getpid()}); idle timeout "
              f"{options.idle_timeout_s:.0f}s", flush=True)
        while not stop.is_set():
            if server.pid is None or not process_alive(server.pid):
                print("the Temporal server exited", flush=True)
                return 1
            try:
                # every call bounded: a watcher stuck on a slow server would never stop it
                if client is None:
                    client = await Client.connect(server.address, namespace=options.server.namespace,
                                                  connect_timeout=timedelta(seconds=CHECK_TIMEOUT_S))
                if await asyncio.wait_for(_worker_attached(client, options.server.namespace, options.task_queue),
                                          timeout=CHECK_TIMEOUT_S):
                    busy_at = time.time()
            except Exception as exc:  # noqa: BLE001 - a failed check is not use; the next one retries
                print(f"use check failed: {str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__}",
                      flush=True)
            idle_since = max(busy_at, last_used(record, options.state_dir))
            if time.time() - idle_since >= options.idle_timeout_s:
                print(f"idle for {options.idle_timeout_s:.0f}s: stopping", flush=True)
                return 0
            try:
                await asyncio.wait_for(stop.wait(), timeout=min(CHECK_EVERY_S, options.idle_timeout_s))
            except TimeoutError:
                pass
        print("stop requested: stopping", flush=True)
        return 0
    finally:
        if record is not None:
            remove_record(record, options.state_dir)
        code = await asyncio.to_thread(server.stop)
        print(f"Temporal server stopped (exit {code})", flush=True)


def _parse(argv: list[str]) -> BackgroundOptions:
    parser = argparse.ArgumentParser(prog=MODULE, description="navigator's background Temporal server")
    parser.add_argument("--ip", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--ui-port", type=int, required=True)
    parser.add_argument("--namespace", default="default")
    parser.add_argument("--db", type=Path)
    parser.add_argument("--task-queue", default="navigator")
    parser.add_argument("--idle-timeout", type=float, required=True)
    parser.add_argument("--state-dir", type=Path, default=default_state_dir())
    parser.add_argument("--startup-timeout", type=float, default=DevServerConfig().startup_timeout_s)
    args = parser.parse_args(argv)
    return BackgroundOptions(
        server=DevServerConfig(ip=args.ip, port=args.port, ui_port=args.ui_port, namespace=args.namespace,
                               db_filename=args.db, startup_timeout_s=args.startup_timeout),
        task_queue=args.task_queue, idle_timeout_s=args.idle_timeout, state_dir=args.state_dir,
    )


def main(argv: list[str] | None = None) -> None:
    """Entry point of the supervisor process."""
    options = _parse(sys.argv[1:] if argv is None else argv)
    try:
        code = asyncio.run(supervise(options))
    except DevServerError as exc:
        print(f"error: {exc}", flush=True)
        code = 1
    # the SDK's bridge threads must not meet a finalizing interpreter (see cli/exits.py)
    sys.stdout.flush()
    os._exit(code)


if __name__ == "__main__":
    main()
