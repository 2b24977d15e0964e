"""Issue #29: a worker that cannot serve a run's model must not fail the run (two real workers).

Two ``navigator worker`` processes poll one task queue of one real dev server, each with its own
``navigator.yaml`` (separate config dirs): the *current* one names the OpenAI-compatible endpoint
``local`` (a real server process on a loopback port), the *older* one does not. Whichever takes a
task of a ``local:…`` run, the run must finish: the older worker hands the task back (a
``ModelNotServedHere`` the workflow reschedules, naming itself and why) and the current one serves it. Before, the older
worker failed the run with "unknown model endpoint". The up-front check asks until a worker that
can serve the model answers (a single answer from the older worker used to refuse the run).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from contextlib import AbstractContextManager
from pathlib import Path

from temporalio.client import Client

from durable_navigator.navcore.model.preflight import NOT_SERVED_HERE_TYPE
from durable_navigator.navcore.navigator.requests import ExplorationResult
from tests.cli.test_explore_openai import GOAL, MODEL, REPLIES, SECRET, _clean_env, _cost, _decoded, _endpoint_yaml
from tests.support.cli import FIXTURE_REPO
from tests.support.e2e import NAVIGATOR
from tests.support.hosts import navigator_worker
from tests.support.openai_server import LocalServer

#: the run's first model task must have been refused by the older worker within this long
REFUSAL_WITHIN_S = 60.0


def _worker(name: str, env: dict[str, str], cwd: Path) -> AbstractContextManager[subprocess.Popen[str]]:
    """``navigator worker`` with ``env``; SIGTERM (ours, by pid) at the end. Its log goes to ``cwd/name.log``."""
    return navigator_worker(env, cwd, cwd / f"{name}.log")


async def _history_text(client: Client, workflow_id: str) -> str:
    return _decoded(await client.get_workflow_handle(workflow_id).fetch_history())


async def test_a_worker_with_an_older_config_hands_the_run_to_one_that_serves_it(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    current, older = tmp_path / "current", tmp_path / "older"
    current.mkdir(), older.mkdir()
    with LocalServer(tmp_path, REPLIES) as llm:
        (current / "navigator.yaml").write_text("endpoints:\n" + _endpoint_yaml(llm.base_url))
        (older / "navigator.yaml").write_text("temporal:\n  namespace: default\n")  # no endpoints yet
        shared = {"TEMPORAL_ADDRESS": client.service_client.config.target_host, "NAVIGATOR_TASK_QUEUE": task_queue,
                  "XDG_CACHE_HOME": str(tmp_path / "xdg-cache"), "XDG_STATE_HOME": str(tmp_path / "xdg-state")}
        current_env = _clean_env(**shared, NAVIGATOR_CONFIG=str(current / "navigator.yaml"), LOCAL_LLM_KEY=SECRET)
        older_env = _clean_env(**shared, NAVIGATOR_CONFIG=str(older / "navigator.yaml"), LOCAL_LLM_KEY=SECRET)
        cli_env = _clean_env(**shared, NAVIGATOR_CONFIG=str(current / "navigator.yaml"))
        # the run is started with no worker polling (the CLI says so and starts it anyway) ...
        started = await asyncio.to_thread(subprocess.run, [
            str(NAVIGATOR), "explore", str(FIXTURE_REPO), GOAL, "--model", MODEL, "--max-iterations", "4",
            "--detach", "--json", "--out", str(tmp_path / "out")],
            cwd=current, env=cli_env, capture_output=True, text=True, timeout=120)
        assert started.returncode == 0, started.stderr[-3000:]
        workflow_id = json.loads(started.stdout)["workflow_id"]
        # ... so the older worker alone takes its first tasks: it must hand them back, not fail the run
        with _worker("older", older_env, older):
            for _ in range(int(REFUSAL_WITHIN_S / 0.5)):
                history = await _history_text(client, workflow_id)
                if NOT_SERVED_HERE_TYPE in history:
                    break
                await asyncio.sleep(0.5)
            assert NOT_SERVED_HERE_TYPE in history, history[-3000:]
            assert "cannot serve model 'local:qwen2.5-coder:7b': unknown model endpoint 'local'" in history
            # the current worker joins; the run goes on and finishes on it
            with _worker("current", current_env, current):
                handle = client.get_workflow_handle(workflow_id, result_type=ExplorationResult)
                result = await asyncio.wait_for(handle.result(), timeout=180)
                # with both polling, the up-front check finds the worker that serves the model
                checks = [await asyncio.to_thread(subprocess.run, [
                    str(NAVIGATOR), "explore", str(FIXTURE_REPO), GOAL, "--model", MODEL, "--detach", "--json",
                    "--max-iterations", "1", "--out", str(tmp_path / "out2")],
                    cwd=current, env=cli_env, capture_output=True, text=True, timeout=120) for _ in range(3)]
        served = llm.requests()
    assert result.stop_reason == "finalized", result
    # every scripted answer was served to the run, and the run booked exactly what the server reported
    first_run = served[:len(REPLIES)]
    assert all(r["reply"] is not None for r in first_run), first_run
    assert result.cost_micros == sum(_cost(r["reply"]["usage"]) for r in first_run)
    for check in checks:
        assert check.returncode == 0, check.stderr[-2000:]
    assert SECRET not in await _history_text(client, workflow_id)
    older_log = (older / "older.log").read_text()
    assert "cannot serve model 'local:qwen2.5-coder:7b': unknown model endpoint 'local'" in older_log
    assert "Traceback" not in older_log, older_log[-3000:]  # a hand-back is one line, not a failure
