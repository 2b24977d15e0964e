"""``navigator mcp --http`` against the session's real Temporal dev server and a real worker.

Here Temporal is configured (``TEMPORAL_ADDRESS``): the server is a plain client and the
test's worker serves the task queue, as a team's workers would.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client
from temporalio.client import Client as TemporalClient

from tests.support import TESTS
from tests.support.cli import FIXTURE_REPO
from tests.support.mcp import TOOLS, Progress, http_server, slow_script, texts, wait_finished

from durable_navigator.repomap.tokens import count_tokens
from durable_navigator.workers.worker import build_activities

GOAL = "why are tokens double-counted in budget enforcement?"
CALL_TIMEOUT_S = 240


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A private copy of the fixture repository: the session's server lists only this test's runs of it."""
    return Path(shutil.copytree(FIXTURE_REPO, tmp_path / "budgetkit"))


@pytest.fixture
def server_env(client: TemporalClient, task_queue: str, tmp_path: Path) -> dict[str, str]:
    """The server's environment: the dev server, this test's task queue, everything else under tmp."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPORAL_", "NAVIGATOR_", "GEMINI_", "GOOGLE_"))}
    (tmp_path / "navigator.yaml").write_text("{}\n")
    env.update(TEMPORAL_ADDRESS=client.service_client.config.target_host, NAVIGATOR_TASK_QUEUE=task_queue,
               NAVIGATOR_CONFIG=str(tmp_path / "navigator.yaml"), XDG_STATE_HOME=str(tmp_path / "state"),
               XDG_CACHE_HOME=str(tmp_path / "cache"))
    return env


async def test_http_explore_with_progress_and_a_cancellation(server_env, start_worker, repo: Path,
                                                              tmp_path: Path) -> None:
    script = slow_script(tmp_path / "slow.yaml", steps=20, stall_s=1.0)
    async with start_worker(build_activities(tmp_path / "artifacts")):
        with http_server(server_env, tmp_path) as server:
            async with Client(server.url, read_timeout_seconds=CALL_TIMEOUT_S) as client:
                assert {t.name for t in (await client.list_tools()).tools} == TOOLS
                progress = Progress()
                done = await client.call_tool(
                    "explore", {"repo": str(repo), "goal": GOAL, "token_budget": 1200},
                    progress_callback=progress)
                assert not done.is_error, texts(done)
                assert count_tokens(texts(done)[0]) <= 1200 and done.structured_content["pack_tokens"] <= 1200
                assert len(progress.seen) >= done.structured_content["iterations"] + 1, progress.seen

                # the 2026-07-28 wire cancels a call by closing its response stream: the run is stopped
                cancelled = Progress()
                async with anyio.create_task_group() as tg:
                    tg.start_soon(lambda: client.call_tool(
                        "explore", {"repo": str(repo), "goal": GOAL, "model": f"scripted:{script}"},
                        progress_callback=cancelled))
                    await cancelled.reached(1, CALL_TIMEOUT_S)
                    tg.cancel_scope.cancel()
                runs = (await client.call_tool("list_runs", {"repo": str(repo)})).structured_content["runs"]
                assert len(runs) == 2 and runs[1]["run_id"] == done.structured_content["run_id"]
                status = await wait_finished(client, runs[0]["run_id"], CALL_TIMEOUT_S)
                outcome = status.structured_content["outcome"]
                assert outcome["stop_reason"] == "stopped" and outcome["iterations"] < 20, outcome
                assert "## Repository map" in texts(status)[0]

                # ask over HTTP, served by the cluster's worker (its research models asked of it first)
                asked = Progress()
                answer = await client.call_tool("ask", {"repo": str(repo), "question": GOAL}, progress_callback=asked)
                assert not answer.is_error, texts(answer)
                assert answer.structured_content["citations"] > 0 and "src/budgetkit/" in texts(answer)[0]
                assert len(asked.seen) >= 2 and asked.seen[-1][2].startswith("finished after"), asked.seen


async def test_http_client_that_vanishes_leaves_the_run_to_finish(server_env, start_worker, repo: Path,
                                                                  tmp_path: Path) -> None:
    script = slow_script(tmp_path / "slow.yaml", steps=5, stall_s=1.0)
    arguments = {"repo": str(repo), "goal": GOAL, "model": f"scripted:{script}", "token_budget": 3000}
    async with start_worker(build_activities(tmp_path / "artifacts")):
        with http_server(server_env, tmp_path) as server:
            # a handshake-era client (what agents speak today) starts an explore and is killed mid-call
            proc = subprocess.Popen([sys.executable, "-m", "tests.support.mcp_client_proc", server.url,
                                     json.dumps(arguments)], cwd=TESTS.parent, stdout=subprocess.PIPE, text=True)
            try:
                assert proc.stdout is not None
                with anyio.fail_after(CALL_TIMEOUT_S):
                    while not (line := await anyio.to_thread.run_sync(proc.stdout.readline)).startswith("progress 1"):
                        assert line, "the client process ended before the first step"
            finally:
                proc.send_signal(signal.SIGKILL)
                proc.wait(timeout=30)
            # a later client finds the run, which went on to its own end (not stopped)
            async with Client(server.url, read_timeout_seconds=CALL_TIMEOUT_S) as client:
                runs = (await client.call_tool("list_runs", {"repo": str(repo)})).structured_content["runs"]
                assert len(runs) == 1
                status = await wait_finished(client, runs[0]["run_id"], CALL_TIMEOUT_S)
                outcome = status.structured_content["outcome"]
                assert outcome["stop_reason"] == "finalized", outcome
                assert outcome["iterations"] >= 5
                pack = texts(status)[0]
                assert count_tokens(pack) <= 3000 and "## Repository map" in pack
                context = await client.read_resource(outcome["context_uri"])
                assert context.contents[0].text.startswith(f"# Context: {GOAL}")
            assert "Traceback" not in server.stderr_text(), server.stderr_text()[-3000:]
