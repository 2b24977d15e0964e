"""Helpers of the MCP server tests: spawning ``navigator mcp``, collecting progress, waiting for runs.

The client is always the official one (``mcp.Client``) over a real transport: stdio to a
spawned ``navigator mcp``, or streamable HTTP to a spawned ``navigator mcp --http``.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import yaml
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import CallToolResult

from tests.support.e2e import NAVIGATOR

__all__ = ["stdio_params", "Progress", "HttpServer", "http_server", "slow_script", "wait_finished", "texts",
           "processes_with_env", "TOOLS"]

#: the tools the server lists
TOOLS = {"explore", "ask", "run_status", "stop_run", "list_runs"}
_URL = re.compile(r"streamable HTTP on (http://\S+)")


def stdio_params(env: Mapping[str, str], cwd: Path, *args: str) -> StdioServerParameters:
    """``navigator mcp ARGS`` as the stdio client launches it."""
    return StdioServerParameters(command=str(NAVIGATOR), args=["mcp", *args], env=dict(env), cwd=str(cwd))


@dataclass
class Progress:
    """Progress notifications of one call, and a wait for a step."""

    seen: list[tuple[float, float | None, str | None]] = field(default_factory=list)
    _wanted: tuple[float, anyio.Event] | None = None

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.seen.append((progress, total, message))
        if self._wanted and progress >= self._wanted[0]:
            self._wanted[1].set()

    async def reached(self, step: float, timeout: float) -> None:
        """Wait until a notification with progress >= ``step`` has arrived."""
        if any(p >= step for p, _, _ in self.seen):
            return
        event = anyio.Event()
        self._wanted = (step, event)
        with anyio.fail_after(timeout):
            await event.wait()

    @property
    def steps(self) -> list[float]:
        return [p for p, _, _ in self.seen]


def texts(result: CallToolResult) -> list[str]:
    """The text blocks of a tool result."""
    return [block.text for block in result.content if getattr(block, "type", None) == "text"]


async def wait_finished(client: Client, run_id: str, timeout: float) -> CallToolResult:
    """Ask ``run_status`` until the run is no longer running; its last answer."""
    with anyio.fail_after(timeout):
        while True:
            status = await client.call_tool("run_status", {"run_id": run_id})
            assert not status.is_error, texts(status)
            if status.structured_content["state"] != "running":
                return status
            await anyio.sleep(0.5)


def slow_script(path: Path, steps: int, stall_s: float) -> Path:
    """A scripted model that takes ``stall_s`` per step and zooms somewhere new each time."""
    decisions = [
        {"action": "update_flight_plan", "reasoning": f"look at area {i}", "stall_s": stall_s,
         "updates": {"set_rules": [{"glob": f"src/**/*{i}*", "level": 2 + i % 3}]}}
        for i in range(steps)
    ]
    path.write_text(yaml.safe_dump({"decisions": decisions}))
    return path


def processes_with_env(key: str, value: str) -> list[int]:
    """PIDs of processes whose environment has ``key=value`` (only ever ours: the value is a tmp path)."""
    needle = f"{key}={value}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


@dataclass
class HttpServer:
    """A spawned ``navigator mcp --http`` and what it printed."""

    proc: subprocess.Popen[str]
    url: str
    lines: list[str]

    def stderr_text(self) -> str:
        return "".join(self.lines)


@contextmanager
def http_server(env: Mapping[str, str], cwd: Path, *args: str, startup_s: float = 120) -> Iterator[HttpServer]:
    """Spawn ``navigator mcp --http --port 0 ARGS``; SIGTERM at the end (it must exit 0)."""
    proc = subprocess.Popen([str(NAVIGATOR), "mcp", "--http", "--port", "0", *args], cwd=cwd, env=dict(env),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    found = threading.Event()

    def drain() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            if _URL.search(line):
                found.set()

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + startup_s
        while not found.wait(0.2):
            assert proc.poll() is None and time.monotonic() < deadline, "".join(lines)[-3000:]
        url = next(m.group(1) for line in lines if (m := _URL.search(line)))
        yield HttpServer(proc, url, lines)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise AssertionError("navigator mcp --http did not stop on SIGTERM: " + "".join(lines)[-3000:]) from None
        reader.join(timeout=5)
        assert proc.stdout is not None
        stdout = proc.stdout.read()
        assert code == 0, (code, "".join(lines)[-3000:])
        assert stdout == "", stdout  # nothing but the protocol (here: nothing) on stdout


def parse_json_block(result: CallToolResult) -> Any:
    """The JSON text block (the structured data as text) of a tool result."""
    return json.loads(texts(result)[-1])


def env_without_temporal(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment minus TEMPORAL_* / NAVIGATOR_* / provider keys."""
    source = base if base is not None else os.environ
    return {k: v for k, v in source.items() if not k.startswith(("TEMPORAL_", "NAVIGATOR_", "GEMINI_", "GOOGLE_"))}
