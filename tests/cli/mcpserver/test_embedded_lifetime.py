"""Issue #29: ``navigator mcp``'s embedded Temporal lives only as long as the MCP server process.

With the user's default ``embedded.idle_timeout_s`` (1,800 s, not the tests' usual 0), an agent that
died after its ``explore`` call returned left the embedded server running under a background
supervisor for half an hour. Now the server is the MCP process's own child: it goes when the process
goes — stdin closed by a dead client, or the process itself killed (SIGKILL: the kernel's lifeline).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio

from tests.support import TESTS
from tests.support.cli import FIXTURE_REPO
from tests.support.e2e import NAVIGATOR, Sandbox
from tests.support.mcp import processes_with_env
from durable_navigator.workers.devserver import port_in_use

#: the user's default idle timeout: what made the server outlive its MCP process
DEFAULT_IDLE_S = 1800.0
#: how soon the embedded server must be gone once its MCP process has ended
GONE_WITHIN_S = 10.0
#: a cold embedded server and a loaded 2-core machine
CALL_TIMEOUT_S = 240


def _temporal_pids(box: Sandbox) -> list[int]:
    """The ``temporal`` processes of this sandbox (they inherit its environment)."""
    pids = processes_with_env("NAVIGATOR_CONFIG", str(box.root / "navigator.yaml"))
    found = []
    for pid in pids:
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(Path(arg.decode()).name == "temporal" for arg in argv if arg) and b"start-dev" in argv:
            found.append(pid)
    return found


def _wait_gone(box: Sandbox, since: float) -> float:
    """Seconds until no temporal process of ``box`` is left and its port is closed (or fail)."""
    while time.monotonic() - since < GONE_WITHIN_S:
        if not _temporal_pids(box) and not port_in_use("127.0.0.1", box.port):
            return time.monotonic() - since
        time.sleep(0.1)
    left = _temporal_pids(box)
    # every process with the sandbox's environment is this test's (a background supervisor too):
    # do not leave them running for 30 minutes
    for pid in processes_with_env("NAVIGATOR_CONFIG", str(box.root / "navigator.yaml")):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    raise AssertionError(f"the embedded Temporal of the MCP server outlived it by {GONE_WITHIN_S:.0f}s: pids {left}")


async def test_embedded_server_stops_when_a_dead_client_closes_stdin(tmp_path: Path) -> None:
    """The agent's explore call returns, then the agent dies (SIGKILL): its server and Temporal go."""
    box = Sandbox.create(tmp_path)
    arguments = {"repo": str(FIXTURE_REPO), "goal": "where is usage recorded?", "token_budget": 2000}
    agent = subprocess.Popen([sys.executable, "-m", "tests.support.mcp_client_proc", "stdio", json.dumps(arguments)],
                             cwd=TESTS.parent, env=box.env(idle_timeout_s=DEFAULT_IDLE_S), stdout=subprocess.PIPE,
                             text=True, start_new_session=True)
    try:
        assert agent.stdout is not None
        with anyio.fail_after(CALL_TIMEOUT_S):
            while not (line := await anyio.to_thread.run_sync(agent.stdout.readline)).startswith("result"):
                assert line, "the agent ended before its explore call returned"
        assert _temporal_pids(box), "no embedded Temporal was started for the MCP server"
    finally:
        agent.send_signal(signal.SIGKILL)  # "an exception after its explore call returned"
        agent.wait(timeout=30)
    killed = time.monotonic()
    with anyio.fail_after(60):  # the orphaned `navigator mcp` sees stdin close and leaves
        while [p for p in processes_with_env("NAVIGATOR_CONFIG", str(box.root / "navigator.yaml"))
               if p not in _temporal_pids(box)]:
            await anyio.sleep(0.1)
    _wait_gone(box, killed)


async def test_embedded_server_dies_with_a_killed_mcp_server(tmp_path: Path) -> None:
    """SIGKILL of ``navigator mcp`` itself (no shutdown code runs): the kernel's lifeline ends Temporal."""
    box = Sandbox.create(tmp_path)
    server = subprocess.Popen([str(NAVIGATOR), "mcp"], cwd=tmp_path, env=box.env(idle_timeout_s=DEFAULT_IDLE_S),
                              stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              start_new_session=True)
    try:
        with anyio.fail_after(CALL_TIMEOUT_S):  # the backend opens its session at start-up, no call needed
            while not port_in_use("127.0.0.1", box.port):
                assert server.poll() is None, server.stderr.read().decode()[-2000:] if server.stderr else ""
                await anyio.sleep(0.2)
    finally:
        server.send_signal(signal.SIGKILL)
        server.wait(timeout=30)
    _wait_gone(box, time.monotonic())
