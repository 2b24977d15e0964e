"""`navigator worker` as a real process: health probes, serving runs, graceful SIGTERM."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

from tests.support.cli import FIXTURE_REPO, ainvoke, json_of
from tests.support.e2e import NAVIGATOR, Sandbox
from temporalio.client import Client

from durable_navigator.workers.devserver import free_port

SCRIPT = """
decisions:
  - action: update_flight_plan
    reasoning: zoom into the ledger
    updates: {set_rules: [{glob: "src/budgetkit/ledger.py", level: 4}]}
  - action: finalize_context
    summary: the ledger holds the answer
"""


def _probe(port: int, path: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


async def _wait_ready(port: int, proc: subprocess.Popen[str]) -> dict:
    for _ in range(150):
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        try:
            code, body = await asyncio.to_thread(_probe, port, "/readyz")
            if code == 200:
                return body
        except (urllib.error.URLError, ConnectionError):
            pass
        await asyncio.sleep(0.2)
    raise AssertionError("the worker never became ready")


async def test_worker_serves_runs_and_stops_on_sigterm(client: Client, task_queue: str, tmp_path: Path) -> None:
    box = Sandbox.create(tmp_path)
    env = {**box.env(), "TEMPORAL_ADDRESS": client.service_client.config.target_host,
           "NAVIGATOR_TASK_QUEUE": task_queue}
    health = free_port()
    proc = subprocess.Popen(
        [str(NAVIGATOR), "--log-json", "worker", "--health-port", str(health), "--health-host", "127.0.0.1",
         "--max-concurrent-activities", "4"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        body = await _wait_ready(health, proc)
        assert body == {"ready": True, "worker_running": True, "frontend_ok": True,
                        "task_queue": task_queue, "last_error": None}
        assert (await asyncio.to_thread(_probe, health, "/healthz"))[0] == 200

        script = tmp_path / "decisions.yaml"
        script.write_text(SCRIPT)
        started = json_of(await ainvoke(
            ["explore", str(FIXTURE_REPO), "where is the ledger?", "--model", f"scripted:{script}",
             "--detach", "--json", "--out", str(tmp_path / "out")], env))
        result = json_of(await ainvoke(["result", started["workflow_id"], "--wait", "--json"], env))
        assert result["stop_reason"] == "finalized" and Path(result["context_path"]).is_file()
        watched = await ainvoke(["status", started["workflow_id"], "--watch", "--json"], env)
        assert watched.exit_code == 0
        (line,) = watched.stdout.splitlines()  # closed run: one ndjson line, then exit
        assert json.loads(line)["status"] == "completed"
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = await asyncio.to_thread(proc.communicate, timeout=60)
    assert proc.returncode == 0, err[-2000:]
    assert "worker stopped" in err
    # --log-json: every structured log line is JSON with the worker's bound ids
    records = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    polling = [r for r in records if r.get("event") == "worker polling"]
    assert polling and polling[0]["task_queue"] == task_queue and polling[0]["slots"] == 4
