"""A tiny HTTP health endpoint for ``navigator worker --health-port`` (Kubernetes probes).

``GET /healthz`` → 200 while the worker's event loop runs (liveness: a hung
loop stops answering). ``GET /readyz`` → 200 once the worker polls its task
queue and the last frontend health check passed, else 503 (readiness). No
framework: an ``asyncio`` server that reads one request line and answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

__all__ = ["HealthState", "serve_health", "monitor_frontend", "HEALTH_PATHS"]

HEALTH_PATHS = ("/healthz", "/readyz")
#: a probe that sends nothing must not hold a connection open forever
_READ_TIMEOUT_S = 5.0


@dataclass
class HealthState:
    """What the probes report; the worker command updates it."""

    worker_running: bool = False
    frontend_ok: bool = False
    last_error: str | None = None
    task_queue: str = ""
    details: dict[str, str] = field(default_factory=dict)

    @property
    def ready(self) -> bool:
        """Polling and the frontend answers."""
        return self.worker_running and self.frontend_ok

    def as_json(self) -> bytes:
        """The body both endpoints return."""
        body = {
            "ready": self.ready,
            "worker_running": self.worker_running,
            "frontend_ok": self.frontend_ok,
            "task_queue": self.task_queue,
            "last_error": self.last_error,
        }
        return json.dumps(body, sort_keys=True).encode()


def _response(status: int, reason: str, body: bytes) -> bytes:
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body


async def _handle(state: HealthState, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        line = await asyncio.wait_for(reader.readline(), _READ_TIMEOUT_S)
        parts = line.decode("latin-1").split()
        path = parts[1] if len(parts) >= 2 else ""
        if path == "/healthz":
            writer.write(_response(200, "OK", state.as_json()))
        elif path == "/readyz":
            ok = state.ready
            writer.write(_response(200 if ok else 503, "OK" if ok else "Service Unavailable", state.as_json()))
        else:
            writer.write(_response(404, "Not Found", b'{"error": "use /healthz or /readyz"}'))
        await writer.drain()
    except (TimeoutError, ConnectionError):
        pass  # a probe that hung up or sent nothing gets nothing
    finally:
        writer.close()


@contextlib.asynccontextmanager
async def serve_health(state: HealthState, host: str, port: int) -> AsyncIterator[asyncio.Server]:
    """Serve the probes on ``host:port`` for the duration of the block."""
    server = await asyncio.start_server(lambda r, w: _handle(state, r, w), host, port)
    try:
        yield server
    finally:
        server.close()
        await server.wait_closed()


async def monitor_frontend(
    state: HealthState, check: Callable[[], Awaitable[object]], interval_s: float
) -> None:
    """Update ``state.frontend_ok`` from ``check()`` every ``interval_s`` seconds (forever)."""
    while True:
        try:
            await check()
            state.frontend_ok, state.last_error = True, None
        except Exception as exc:  # noqa: BLE001 - any failure means "not ready"; it is reported, not hidden
            state.frontend_ok, state.last_error = False, str(exc)[:200]
        await asyncio.sleep(interval_s)
