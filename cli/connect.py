"""Reaching Temporal from the CLI: a configured cluster, a server this tool started, or a new one.

Resolution order (the README documents it):

1. ``TEMPORAL_ADDRESS`` / ``temporal.address`` set → connect there (TLS
   cert/key and ``TEMPORAL_API_KEY`` for Temporal Cloud); no in-process worker
   unless asked, the team's workers serve the task queue.
2. otherwise a server this tool started for the configured database — ``navigator
   server`` in another terminal, or the background server an earlier ``explore``
   started (:mod:`workers.servers` records them) — whatever its ports;
3. otherwise something of this user listens on the embedded address (default
   ``127.0.0.1:7233``, e.g. ``temporal server start-dev``) → connect to it; a
   listener of *another* user is never used;
4. otherwise, when the command allows it (``explore``, ``batch run``), start the
   embedded server: in the background (:mod:`workers.background`, it outlives the
   command so the printed links keep working, and stops after
   ``embedded.idle_timeout_s`` idle), or for the duration of the command when that
   timeout is 0. When the configured ports are taken by someone else, free ports
   are used.

``explore`` also runs an in-process worker in cases 2-4 so a newcomer needs
nothing else running.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from temporalio.client import Client, TLSConfig

from durable_navigator.activities.artifacts import ArtifactStore
from durable_navigator.cli.config import NavigatorConfig
from durable_navigator.cli.errors import TemporalUnreachableError, stderr
from durable_navigator.cli.stores import open_artifact_store
from durable_navigator.workers.background import BackgroundOptions, start_background
from durable_navigator.workers.devserver import (
    DevServer,
    DevServerConfig,
    default_state_dir,
    free_port,
    port_in_use,
    workflow_ui_url,
)
from durable_navigator.workers.logging import get_logger, route_core_logs
from durable_navigator.workers.servers import (
    ServerRecord,
    find_record,
    port_owner_uid,
    record_for_address,
    touch,
)

__all__ = [
    "TemporalSession",
    "LocalServer",
    "connect_client",
    "open_session",
    "local_server",
    "ui_base_for",
    "idle_note",
    "say_server",
    "say_after",
    "CONNECT_TIMEOUT",
]

#: how long a CLI command waits for the frontend before reporting exit code 3
CONNECT_TIMEOUT = timedelta(seconds=10)
#: how long a command goes on after its in-process worker stopped before it gives up (exit code 3)
WORKER_LOST_GRACE_S = 10.0
#: how long "does something listen on the embedded port?" waits for a connection
PORT_CHECK_TIMEOUT_S = 3.0
_CLOUD_SUFFIX = ".tmprl.cloud"
_CLOUD_UI = "https://cloud.temporal.io"

log = get_logger(__name__)


@dataclass
class TemporalSession:
    """A connected client plus whatever this command started to get it."""

    client: Client
    config: NavigatorConfig
    address: str
    ui_base: str | None
    embedded: DevServer | None = None
    #: an in-process worker serves the task queue for this command
    in_process_worker: bool = False
    #: the recorded server in use (``navigator server`` or the background one), if any
    server: ServerRecord | None = None
    #: this command started ``server`` in the background (it outlives the command)
    started_background: bool = False
    #: the in-process worker stopped and the command was cancelled for it (not a Ctrl-C)
    worker_lost: bool = False
    _store: ArtifactStore | None = None

    def artifact_store(self) -> ArtifactStore:
        """The configured artifact store (opened on first use; a bad ``artifacts:`` setting raises then)."""
        if self._store is None:
            self._store = open_artifact_store(self.config, check=False)
        return self._store

    @property
    def namespace(self) -> str:
        """The namespace every call uses."""
        return self.config.temporal.namespace

    @property
    def task_queue(self) -> str:
        """The navigator task queue."""
        return self.config.temporal.task_queue

    def ui_link(self, workflow_id: str) -> str | None:
        """The Web UI page of ``workflow_id`` (``None`` when no UI is known)."""
        if self.ui_base is None:
            return None
        return workflow_ui_url(self.ui_base, self.namespace, workflow_id)


@dataclass(frozen=True)
class LocalServer:
    """A server on this machine found for the configuration (cases 2 and 3)."""

    address: str
    ui_base: str | None
    record: ServerRecord | None = None


def _foreign(ip: str, port: int) -> int | None:
    """The uid of another user listening on ``ip:port``, else ``None``."""
    owner = port_owner_uid(ip, port)
    return owner if owner is not None and owner != os.getuid() else None


def local_server(config: NavigatorConfig) -> LocalServer | None:
    """The server this configuration uses when no address is configured, if one runs."""
    emb = config.embedded
    record = find_record(emb.db_filename)
    if record is not None:
        touch(record)  # a use: the background server's idle timeout starts again
        return LocalServer(record.grpc, record.ui, record)
    # a generous connect timeout: on a loaded machine a short one misses a live server
    if port_in_use(emb.ip, emb.port, timeout_s=PORT_CHECK_TIMEOUT_S) and _foreign(emb.ip, emb.port) is None:
        return LocalServer(f"{emb.ip}:{emb.port}", f"http://{emb.ip}:{emb.ui_port}")
    return None


def ui_base_for(config: NavigatorConfig) -> str | None:
    """Where the Web UI of the server this configuration uses lives, if we can tell."""
    if config.temporal.ui_url:
        return config.temporal.ui_url
    address = config.temporal.address
    if address is None:
        found = local_server(config)
        if found is not None:
            return found.ui_base
        return f"http://{config.embedded.ip}:{config.embedded.ui_port}"
    record = record_for_address(address)
    if record is not None:
        return record.ui
    if address.split(":")[0].endswith(_CLOUD_SUFFIX):
        return _CLOUD_UI
    return None


def idle_note(record: ServerRecord) -> str:
    """What happens to a background server: how long it lives and how to stop it."""
    return (f"it stops after {duration_text(record.idle_timeout_s or 0)} with no worker and no navigator command "
            "(`navigator server stop` stops it now)")


def duration_text(seconds: float) -> str:
    """``25 s``, ``5 min``, ``1 h 30 min``: how a person says an idle timeout."""
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 60 else f"{minutes // 60} h" + (f" {minutes % 60} min" if minutes % 60 else "")


def _data_converter() -> Any:
    # The worker, every client and the Replayer share one converter (STYLE habit 6).
    from durable_navigator.workers.converter import DATA_CONVERTER

    return DATA_CONVERTER


async def connect_client(config: NavigatorConfig, address: str | None = None) -> Client:
    """Connect with the configured namespace, TLS and API key; exit code 3 on failure."""
    route_core_logs()
    temporal = config.temporal
    target = address or temporal.address or f"{config.embedded.ip}:{config.embedded.port}"
    tls: bool | TLSConfig = False
    if temporal.tls_cert is not None and temporal.tls_key is not None:
        tls = TLSConfig(
            client_cert=temporal.tls_cert.read_bytes(),
            client_private_key=temporal.tls_key.read_bytes(),
        )
    api_key = temporal.api_key.get_secret_value() if temporal.api_key else None
    if api_key and tls is False:
        tls = True  # Temporal Cloud API keys are only accepted over TLS
    try:
        return await Client.connect(
            target,
            namespace=temporal.namespace,
            api_key=api_key,
            tls=tls,
            data_converter=_data_converter(),
            connect_timeout=CONNECT_TIMEOUT,
        )
    except RuntimeError as exc:
        # The message may quote the address but never the key (it is not in it).
        raise TemporalUnreachableError(
            f"cannot reach Temporal at {target} ({str(exc).splitlines()[0][:200]}); start "
            "`navigator server`, or check TEMPORAL_ADDRESS / TLS / TEMPORAL_API_KEY"
        ) from None


def _embedded_config(config: NavigatorConfig) -> DevServerConfig:
    """The embedded server's settings; a port another user listens on is swapped for a free one.

    Only a listener *known* to be someone else's is avoided (``/proc/net``): a port that is
    merely busy (ours, starting up) keeps its number, and the start reports it in use.
    """
    emb = config.embedded
    port = free_port(emb.ip) if _foreign(emb.ip, emb.port) is not None else emb.port
    ui_port = free_port(emb.ip) if _foreign(emb.ip, emb.ui_port) is not None else emb.ui_port
    return DevServerConfig(ip=emb.ip, port=port, ui_port=ui_port, db_filename=emb.db_filename,
                           startup_timeout_s=emb.startup_timeout_s)


def _unreachable(config: NavigatorConfig) -> TemporalUnreachableError:
    emb = config.embedded
    address = f"{emb.ip}:{emb.port}"
    owner = _foreign(emb.ip, emb.port)
    if owner is not None:
        return TemporalUnreachableError(
            f"{address} is another user's server (uid {owner}) and no navigator server of yours serves "
            f"{emb.db_filename}; start one with `navigator server --port N` (or set TEMPORAL_ADDRESS)"
        )
    return TemporalUnreachableError(
        f"no navigator server runs for {emb.db_filename} and nothing listens on {address} (TEMPORAL_ADDRESS is "
        "not set); `navigator explore` starts one, or run `navigator server` (or set TEMPORAL_ADDRESS) and retry"
    )


@contextlib.asynccontextmanager
async def open_session(
    config: NavigatorConfig,
    *,
    allow_embedded: bool = False,
    in_process_worker: bool | None = False,
    own_embedded: bool = False,
) -> AsyncIterator[TemporalSession]:
    """Connect (starting the embedded server if allowed and needed) and maybe run a worker.

    ``in_process_worker=None`` means *auto*: run one unless ``TEMPORAL_ADDRESS``
    points at a configured cluster. ``own_embedded``: an embedded server started here is this
    process's child whatever ``embedded.idle_timeout_s`` says (stopped when the block ends, and
    killed by the kernel if this process dies first) — never a background server that outlives it.
    """
    # before any client (the embedded server's readiness probe is the first): Core's console logger
    # writes to stdout, after `--json` output; routed, its lines go to the log handler (stderr)
    route_core_logs()
    server: DevServer | None = None
    record: ServerRecord | None = None
    started_background = False
    if config.temporal.address is None:
        found = local_server(config)
        if found is not None:
            address, ui_base, record = found.address, found.ui_base, found.record
        elif not allow_embedded:
            raise _unreachable(config)
        elif config.embedded.idle_timeout_s > 0 and not own_embedded:
            options = BackgroundOptions(server=_embedded_config(config), task_queue=config.temporal.task_queue,
                                        idle_timeout_s=config.embedded.idle_timeout_s,
                                        state_dir=default_state_dir())
            log.info("starting the background Temporal server", address=options.server.address)
            record = await asyncio.to_thread(start_background, options)
            address, ui_base, started_background = record.grpc, record.ui, True
        else:
            dev_config = _embedded_config(config)
            server = DevServer(dev_config, log_path=default_state_dir() / "temporal-server.log")
            address, ui_base = dev_config.address, dev_config.ui_url
            log.info("starting embedded Temporal", address=address, db=str(config.embedded.db_filename))
            server.start()
    else:
        address = config.temporal.address
        ui_base = ui_base_for(config)
    try:
        if server is not None:
            await server.wait_ready()
        client = await connect_client(config, address)
        session = TemporalSession(client, config, address, ui_base, embedded=server, server=record,
                                  started_background=started_background)
        run_worker = in_process_worker if in_process_worker is not None else config.temporal.address is None
        if run_worker:
            async with _in_process_worker(session):
                yield session
        else:
            yield session
    finally:
        if server is not None:
            # give the server its own time; Ctrl-C during shutdown must not orphan it
            await asyncio.to_thread(server.stop)
        if record is not None:
            touch(record)  # the idle timeout counts from the end of this command


@contextlib.asynccontextmanager
async def _in_process_worker(session: TemporalSession) -> AsyncIterator[None]:
    """Run a worker for the duration of the block, in a task of its own.

    Not ``async with worker``: on a fatal worker error (the server went away) the SDK's
    context manager cancels the *command's* task, which then dies with a bare
    ``CancelledError`` instead of saying what happened. Run as its own task, the worker
    fails alone; the command reports the lost server itself (exit code 3).

    A worker that stops while the command still runs (its start-up check failed on a
    server slow to come up, a fatal poll error) would leave the command following a run
    nothing serves, for ever: :data:`WORKER_LOST_GRACE_S` later the command is cancelled
    and fails with :class:`TemporalUnreachableError` saying so (unless it reported the
    lost server itself meanwhile).
    """
    from durable_navigator.workers.worker import build_worker

    config = session.config
    store = await asyncio.to_thread(open_artifact_store, config)
    worker = build_worker(session.client, task_queue=session.task_queue, endpoints=config.endpoints,
                          pricing_file=config.pricing_file, store=store)
    running = asyncio.create_task(worker.run())
    command = asyncio.current_task()
    loop = asyncio.get_running_loop()
    lost: list[str] = []  # why the worker stopped, once the command was cancelled for it
    active = True

    def give_up() -> None:
        if active and command is not None and not command.done():
            lost.append(_worker_error(running))
            session.worker_lost = True
            command.cancel()

    def on_worker_end(_: asyncio.Task[None]) -> None:
        if active:
            loop.call_later(WORKER_LOST_GRACE_S, give_up)

    running.add_done_callback(on_worker_end)
    session.in_process_worker = True
    try:
        yield
    except asyncio.CancelledError:
        if lost and command is not None and command.uncancel() == 0:
            raise TemporalUnreachableError(
                f"the in-process worker stopped ({lost[0]}), so this command stops waiting; its run is durable: "
                "`navigator worker` finishes it, `navigator ls` shows it"
            ) from None
        raise
    finally:
        active = False
        session.in_process_worker = False
        if not running.done():
            await worker.shutdown()
        await asyncio.wait([running])
        if not running.cancelled() and running.exception() is not None:
            log.info("the in-process worker stopped with an error", error=str(running.exception())[:300])


def _worker_error(task: asyncio.Task[None]) -> str:
    """What ended a worker task, in one short line."""
    if task.cancelled():
        return "cancelled"
    exc = task.exception()
    if exc is None:
        return "it shut down"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:200]}" if text else type(exc).__name__


def say_server(session: TemporalSession) -> None:
    """Which server this run uses, when this command started it (and what becomes of it)."""
    if session.started_background and session.server is not None:
        record = session.server
        stderr.print(f"started a background Temporal server: gRPC {record.grpc} · Web UI {record.ui} "
                     f"(pid {record.pid})", markup=False)
        stderr.print(f"  it keeps running after this command, so the Web UI link keeps working; "
                     f"{idle_note(record)}", markup=False)
    elif session.embedded is not None:
        stderr.print(f"embedded Temporal started: gRPC {session.address} · Web UI {session.ui_base} (it stops with "
                     "this command: embedded.idle_timeout_s is 0)", markup=False)


def say_after(session: TemporalSession) -> None:
    """What happens to the server and the link once this command ends."""
    if session.embedded is not None:
        stderr.print("the embedded server stops now; its history is kept — `navigator server` shows it again")
    elif session.server is not None and session.server.mode == "background":
        stderr.print(f"the Web UI link works while the background server runs: {idle_note(session.server)}",
                     markup=False)


def announce_started(session: TemporalSession, wid: str, what: str) -> str | None:
    """``started <id> (<what>, <which worker>)`` and the run's Web UI link (or how to get one); the link."""
    link = session.ui_link(wid)
    worker = "in-process worker" if session.in_process_worker else f"workers on {session.task_queue!r}"
    stderr.print(f"started [bold]{wid}[/bold] ({what}, {worker})")
    if link:
        stderr.print(f"Web UI: {link}", markup=False, soft_wrap=True)
    else:
        stderr.print(f"Web UI: unknown for {session.address}; set TEMPORAL_UI_URL (or temporal.ui_url) to get "
                     "links", markup=False, soft_wrap=True)
    return link


def print_started_id(session: TemporalSession, wid: str, link: str | None, json_out: bool) -> None:
    """What ``--detach`` prints on stdout: the run's id (or id, link and task queue as JSON)."""
    from durable_navigator.cli.common import print_json, stdout

    if json_out:
        print_json({"workflow_id": wid, "ui_url": link, "task_queue": session.task_queue})
    else:
        stdout.print(wid)
