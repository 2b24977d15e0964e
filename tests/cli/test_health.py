"""The worker's HTTP health endpoint."""

from __future__ import annotations

import asyncio
import json

from durable_navigator.cli.health import HealthState, monitor_frontend, serve_health
from durable_navigator.workers.devserver import free_port


async def _get(port: int, path: str) -> tuple[int, dict]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    await writer.drain()
    raw = await reader.read()
    writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


async def test_liveness_and_readiness() -> None:
    state = HealthState(task_queue="q")
    port = free_port()
    async with serve_health(state, "127.0.0.1", port):
        assert (await _get(port, "/healthz"))[0] == 200
        code, body = await _get(port, "/readyz")
        assert code == 503 and body["ready"] is False
        state.worker_running = True
        state.frontend_ok = True
        code, body = await _get(port, "/readyz")
        assert code == 200 and body == {
            "ready": True, "worker_running": True, "frontend_ok": True, "task_queue": "q", "last_error": None,
        }
        assert (await _get(port, "/other"))[0] == 404


async def test_monitor_reports_failures() -> None:
    state = HealthState(worker_running=True)
    calls = 0

    async def check() -> None:
        nonlocal calls
        calls += 1
        if calls > 1:
            raise RuntimeError("frontend down")

    task = asyncio.create_task(monitor_frontend(state, check, 0.01))
    await asyncio.sleep(0.005)
    assert state.ready
    await asyncio.sleep(0.05)
    task.cancel()
    assert not state.ready and state.last_error == "frontend down"
