"""Errors before work: inputs a run could never succeed with are refused before anything starts.

Each case runs against the session's real dev server with a real worker on the
test's task queue, and checks exit code 2, the one-line error, and that no run
was started and no output folder was made.
"""

from __future__ import annotations

import asyncio
import base64
import os
import re
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio
from cli_support import FIXTURE_REPO, ainvoke
from e2e_support import NAVIGATOR
from temporalio.client import Client, WorkflowHistory

from durable_navigator.activities.artifacts import LocalArtifactStore
from durable_navigator.activities.models.registry import TablePricer
from durable_navigator.activities.navigator import NavigatorActivities
from durable_navigator.navcore.flightplan import MIN_TOKEN_BUDGET
from durable_navigator.workers.worker import build_worker

GEMINI = "gemini-2.5-flash"
CANARY = "AIza-preflight-canary-0123456789"


@pytest_asyncio.fixture(loop_scope="session")
async def served(client: Client, task_queue: str, tmp_path: Path) -> AsyncIterator[dict[str, str]]:
    """A worker on the test's task queue and the env pointing the CLI at it (no keys anywhere)."""
    activities = NavigatorActivities(LocalArtifactStore(tmp_path / "artifacts"), pricer=TablePricer.load())
    (tmp_path / "navigator.yaml").write_text("{}\n")
    env = {
        "TEMPORAL_ADDRESS": client.service_client.config.target_host,
        "NAVIGATOR_TASK_QUEUE": task_queue,
        "NAVIGATOR_CONFIG": str(tmp_path / "navigator.yaml"),
    }
    async with build_worker(client, task_queue, activities=activities):
        yield env


async def _runs_on(client: Client, task_queue: str, workflow_type: str) -> list[str]:
    query = f"WorkflowType = '{workflow_type}' AND TaskQueue = '{task_queue}'"
    return [w.id async for w in client.list_workflows(query)]


def _subprocess_env(cli_env: dict[str, str], **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPORAL_", "NAVIGATOR_", "GEMINI_", "GOOGLE_"))}
    return {**env, **cli_env, "COLUMNS": "200", **extra}


async def _navigator(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """The real console script, so its environment (keys) is its own, not the test worker's."""
    return await asyncio.to_thread(
        subprocess.run, [str(NAVIGATOR), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def _decoded(history: WorkflowHistory) -> str:
    """The history's JSON with every payload's base64 data decoded (where a key would hide)."""
    text = history.to_json()
    payloads = [base64.b64decode(d).decode("utf-8", "replace") for d in re.findall(r'"data": "([^"]+)"', text)]
    return text + "\n".join(payloads)


def _one_error_line(stderr: str) -> str:
    assert stderr.startswith("Error: ") and stderr.count("\n") == 1, stderr
    return stderr


def test_help_says_the_real_minimum() -> None:
    from cli_support import invoke

    lines = invoke(["explore", "--help"]).stdout.splitlines()
    row = next(i for i, line in enumerate(lines) if "--tokens" in line)
    assert f"at least {MIN_TOKEN_BUDGET}" in lines[row] + lines[row + 1] and "x>=1" not in lines[row]


async def test_tokens_below_the_engine_minimum(served: dict[str, str], client: Client, task_queue: str,
                                               tmp_path: Path) -> None:
    out = tmp_path / "out"
    for tokens in ("10", str(MIN_TOKEN_BUDGET - 1)):
        result = await ainvoke(["explore", str(FIXTURE_REPO), "goal", "--tokens", tokens, "--out", str(out)], served)
        assert result.exit_code == 2, result.stderr
        assert _one_error_line(result.stderr) == (
            f"Error: --tokens {tokens} is below the minimum map size of {MIN_TOKEN_BUDGET} tokens (the repo map's "
            f"header alone needs that many); use {MIN_TOKEN_BUDGET} or more\n")
    # the configured default is held to the same floor
    cfg = tmp_path / "small.yaml"
    cfg.write_text("defaults:\n  token_budget: 10\n")
    result = await ainvoke(["explore", str(FIXTURE_REPO), "goal", "--out", str(out)],
                           {**served, "NAVIGATOR_CONFIG": str(cfg)})
    assert result.exit_code == 2 and f"defaults.token_budget of {cfg} 10 is below" in _one_error_line(result.stderr)
    assert await _runs_on(client, task_queue, "NavigatorWorkflow") == [] and not out.exists()


async def test_batch_job_below_the_minimum_budget(served: dict[str, str], client: Client, task_queue: str,
                                                  tmp_path: Path) -> None:
    jobs = tmp_path / "jobs.yaml"
    jobs.write_text(f"jobs:\n  - repo: {FIXTURE_REPO}\n    goal: ok\n    token_budget: 10\n")
    result = await ainvoke(["batch", "run", str(jobs), "--budget-usd", "1", "--id", "batch-small",
                            "--out", str(tmp_path / "out")], served)
    assert result.exit_code == 2, result.stderr
    assert result.stderr.splitlines() == [
        "Error: 1 configuration problem(s):",
        f"  - {jobs}: job 0 (line 4) field 'token_budget': Input should be greater than or equal to "
        f"{MIN_TOKEN_BUDGET}; use at least {MIN_TOKEN_BUDGET}: the repo map's header alone needs that many tokens",
    ]
    assert await _runs_on(client, task_queue, "BatchWorkflow") == [] and not (tmp_path / "out").exists()


async def test_batch_schema_and_job_problems_arrive_in_one_round(served: dict[str, str], client: Client,
                                                                 task_queue: str, tmp_path: Path) -> None:
    jobs = tmp_path / "jobs.yaml"
    jobs.write_text(
        "defaults:\n"
        "  max_iterations: 0\n"                       # line 2: schema (defaults)
        "jobs:\n"
        f"  - repo: {FIXTURE_REPO}\n"                # job 0: fine
        "    goal: fine\n"
        f"  - repo: {tmp_path / 'missing'}\n"        # job 1 (line 6): per-job, missing repository
        "    goal: x\n"
        f"  - repo: {FIXTURE_REPO}\n"                # job 2: schema, no goal
        "    colour: blue\n"                         # line 9: schema, unknown field
        f"  - repo: {FIXTURE_REPO}\n"                # job 3: per-job, unknown model (line 12)
        "    goal: y\n"
        "    model: gpt-5\n"
    )
    result = await ainvoke(["batch", "run", str(jobs), "--budget-usd", "1", "--out", str(tmp_path / "out")], served)
    assert result.exit_code == 2, result.stderr
    lines = result.stderr.splitlines()
    assert lines[0] == "Error: 5 configuration problem(s):", lines
    body = "\n".join(lines[1:])
    assert "'defaults.max_iterations' (line 2)" in lines[1]  # top level first, then job by job
    assert f"job 1 (line 6) field 'repo': {tmp_path / 'missing'} is not a directory" in body
    assert "job 2 (line 8) field 'goal': Field required" in body
    assert "job 2 (line 9) field 'colour'" in body
    assert "job 3 (line 12) field 'model': unknown model 'gpt-5'" in body
    assert await _runs_on(client, task_queue, "BatchWorkflow") == [] and not (tmp_path / "out").exists()
