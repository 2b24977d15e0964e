"""Reaching Temporal from the CLI: a configured cluster, a local server, or the embedded one.

Resolution order (the README documents it):

1. ``TEMPORAL_ADDRESS`` / ``temporal.address`` set → connect there (TLS
   cert/key and ``TEMPORAL_API_KEY`` for Temporal Cloud); no in-process worker
   unless asked, the team's workers serve the task queue.
2. otherwise something listens on the embedded address (default
   ``127.0.0.1:7233``, e.g. ``navigator server``) → connect to it;
3. otherwise, when the command allows it (``explore``), start the embedded dev
   server for the duration of the command.

``explore`` also runs an in-process worker in cases 2 and 3 so a newcomer
needs nothing else running.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from temporalio.client import Client, TLSConfig

from durable_navigator.cli.config import NavigatorConfig
from durable_navigator.cli.errors import TemporalUnreachableError
from durable_navigator.workers.devserver import (
    DevServer,
    DevServerConfig,
    default_state_dir,
    port_in_use,
    workflow_ui_url,
)
from durable_navigator.workers.logging import get_logger

__all__ = [
    "TemporalSession",
    "connect_client",
    "open_session",
    "ui_base_for",
    "CONNECT_TIMEOUT",
]

#: how long a CLI command waits for the frontend before reporting exit code 3
CONNECT_TIMEOUT = timedelta(seconds=10)
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


def ui_base_for(config: NavigatorConfig) -> str | None:
    """Where the Web UI of the configured server lives, if we can tell."""
    if config.temporal.ui_url:
        return config.temporal.ui_url
    address = config.temporal.address
    if address is None:
        return f"http://{config.embedded.ip}:{config.embedded.ui_port}"
    if address.split(":")[0].endswith(_CLOUD_SUFFIX):
        return _CLOUD_UI
    return None


def _data_converter() -> Any:
    # The worker, every client and the Replayer share one converter (STYLE habit 6).
    from durable_navigator.workers.converter import DATA_CONVERTER

    return DATA_CONVERTER


async def connect_client(config: NavigatorConfig, address: str | None = None) -> Client:
    """Connect with the configured namespace, TLS and API key; exit code 3 on failure."""
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
    emb = config.embedded
    return DevServerConfig(
        ip=emb.ip, port=emb.port, ui_port=emb.ui_port, db_filename=emb.db_filename
    )


@contextlib.asynccontextmanager
async def open_session(
    config: NavigatorConfig,
    *,
    allow_embedded: bool = False,
    in_process_worker: bool | None = False,
) -> AsyncIterator[TemporalSession]:
    """Connect (starting the embedded server if allowed and needed) and maybe run a worker.

    ``in_process_worker=None`` means *auto*: run one unless ``TEMPORAL_ADDRESS``
    points at a configured cluster.
    """
    server: DevServer | None = None
    ui_base = ui_base_for(config)
    if config.temporal.address is None:
        address = f"{config.embedded.ip}:{config.embedded.port}"
        if not port_in_use(config.embedded.ip, config.embedded.port):
            if not allow_embedded:
                raise TemporalUnreachableError(
                    f"nothing listens on {address} and TEMPORAL_ADDRESS is not set; start "
                    "`navigator server` (or set TEMPORAL_ADDRESS) and retry"
                )
            server = DevServer(
                _embedded_config(config), log_path=default_state_dir() / "temporal-server.log"
            )
            log.info("starting embedded Temporal", address=address, db=str(config.embedded.db_filename))
            server.start()
    else:
        address = config.temporal.address
    try:
        if server is not None:
            await server.wait_ready()
        client = await connect_client(config, address)
        session = TemporalSession(client, config, address, ui_base, embedded=server)
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


@contextlib.asynccontextmanager
async def _in_process_worker(session: TemporalSession) -> AsyncIterator[None]:
    from durable_navigator.workers.worker import build_worker

    config = session.config
    worker = build_worker(session.client, task_queue=session.task_queue, endpoints=config.endpoints,
                          pricing_file=config.pricing_file)
    async with worker:
        session.in_process_worker = True
        try:
            yield
        finally:
            session.in_process_worker = False
