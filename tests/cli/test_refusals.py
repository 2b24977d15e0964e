"""Errors before work: inputs a run could never succeed with are refused before anything starts.

Each case runs against the session's real dev server with a real worker on the
test's task queue, and checks exit code 2, the one-line error, and that no run
was started and no output folder was made.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
import yaml
from tests.support.cli import FIXTURE_REPO, ainvoke
from tests.support.e2e import NAVIGATOR
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHistory

from tests.support.navigator import ZOOM_BUDGET, ScriptProvider

from durable_navigator.activities.artifacts import LocalArtifactStore
from durable_navigator.activities.pricing_loader import TablePricer
from durable_navigator.activities.navigator import NavigatorActivities
from durable_navigator.navtypes.flightplan import MIN_TOKEN_BUDGET
from durable_navigator.navcore.model.preflight import PREFLIGHT_WORKFLOW
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
    from tests.support.cli import invoke

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
    assert result.exit_code == 2
    assert _one_error_line(result.stderr).startswith(f"Error: defaults.token_budget 10 in {cfg} is below the minimum")
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
    assert f"job 1 (line 6) field 'repo': repository {tmp_path / 'missing'} does not exist" in body
    assert "job 2 (line 8) field 'goal': Field required" in body
    assert "job 2 (line 9) field 'colour'" in body
    assert "job 3 (line 12) field 'model': unknown model 'gpt-5'" in body
    assert await _runs_on(client, task_queue, "BatchWorkflow") == [] and not (tmp_path / "out").exists()


async def test_gemini_refused_when_the_worker_has_no_credentials(
    served: dict[str, str], client: Client, task_queue: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CLI has a key, the worker does not: the worker's answer decides, before anything starts."""
    for key in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
        monkeypatch.delenv(key, raising=False)  # the test's worker runs in this process
    env = _subprocess_env(served, GEMINI_API_KEY=CANARY)
    out = tmp_path / "out"
    proc = await _navigator(["explore", str(FIXTURE_REPO), "goal", "--model", GEMINI, "--out", str(out)], env, tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert _one_error_line(proc.stderr).startswith(
        f"Error: model '{GEMINI}' cannot be served by the worker(s) on task queue '{task_queue}': "
        "no Gemini credentials on the worker: set GEMINI_API_KEY")
    # the worker answered the check (none was ended for want of a taker). Not a wall-clock bound: the
    # command's own start-up (imports, connect) took 72 s under load ~20, with the check answered at once
    checks = await _runs_on(client, task_queue, PREFLIGHT_WORKFLOW)
    assert [(await client.get_workflow_handle(c).describe()).status for c in checks] == [
        WorkflowExecutionStatus.COMPLETED]
    assert await _runs_on(client, task_queue, "NavigatorWorkflow") == [] and not out.exists()
    # a batch with that model is refused the same way, with the job's line
    jobs = tmp_path / "jobs.yaml"
    jobs.write_text(yaml.safe_dump({"jobs": [{"repo": str(FIXTURE_REPO), "goal": "g"},
                                              {"repo": str(FIXTURE_REPO), "goal": "g", "model": GEMINI}]}))
    proc = await _navigator(["batch", "run", str(jobs), "--budget-usd", "1", "--out", str(out)], env, tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert f"job 1 (line 5) field 'model': the worker(s) on task queue '{task_queue}' cannot serve it: " \
           "no Gemini credentials on the worker" in proc.stderr
    assert await _runs_on(client, task_queue, "BatchWorkflow") == [] and not out.exists()


async def test_explore_branches_asks_the_workers_about_the_model_before_starting(
    served: dict[str, str], client: Client, task_queue: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``explore --branches`` runs the same preflight as ``explore``: a worker that cannot serve the model
    refuses it before any ``ExploreBranchesWorkflow`` starts."""
    for key in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
        monkeypatch.delenv(key, raising=False)  # the test's worker runs in this process
    env = _subprocess_env(served, GEMINI_API_KEY=CANARY)
    out = tmp_path / "out"
    proc = await _navigator(["explore", str(FIXTURE_REPO), "goal", "--model", GEMINI, "--branches", "2",
                             "--out", str(out)], env, tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert _one_error_line(proc.stderr).startswith(
        f"Error: model '{GEMINI}' cannot be served by the worker(s) on task queue '{task_queue}': "
        "no Gemini credentials on the worker: set GEMINI_API_KEY")
    assert len(await _runs_on(client, task_queue, PREFLIGHT_WORKFLOW)) == 1
    assert await _runs_on(client, task_queue, "ExploreBranchesWorkflow") == [] and not out.exists()


async def test_gemini_accepted_when_the_worker_has_credentials_and_the_key_stays_out_of_history(
    client: Client, task_queue: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker has a key, the CLI does not: the check passes and the run goes through.

    The worker's Gemini provider is a scripted stand-in (no network in tests); the check
    still reads the worker's credentials and prices as for the real one.
    """
    monkeypatch.setenv("GEMINI_API_KEY", CANARY)  # the worker's environment, not the CLI's
    activities = NavigatorActivities(
        LocalArtifactStore(tmp_path / "artifacts"), pricer=TablePricer.load(),
        model_overrides={GEMINI: ScriptProvider(steps=[ZOOM_BUDGET])},
    )
    (tmp_path / "navigator.yaml").write_text("{}\n")
    env = _subprocess_env({"TEMPORAL_ADDRESS": client.service_client.config.target_host,
                           "NAVIGATOR_TASK_QUEUE": task_queue, "NAVIGATOR_CONFIG": str(tmp_path / "navigator.yaml")})
    async with build_worker(client, task_queue, activities=activities):
        proc = await _navigator(["explore", str(FIXTURE_REPO), "goal", "--model", GEMINI, "--planning", "off",
                                 "--json", "--out", str(tmp_path / "out")], env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    wid = json.loads(proc.stdout)["workflow_id"]
    checks = await _runs_on(client, task_queue, PREFLIGHT_WORKFLOW)
    assert len(checks) == 1
    for run in (checks[0], wid):
        text = _decoded(await client.get_workflow_handle(run).fetch_history())
        assert GEMINI in text and CANARY not in text


async def test_no_worker_answering_is_not_a_refusal(client: Client, task_queue: str, tmp_path: Path) -> None:
    """With no worker on the queue the check times out, says so, and the run is started to wait for one."""
    (tmp_path / "navigator.yaml").write_text("{}\n")
    env = {"TEMPORAL_ADDRESS": client.service_client.config.target_host, "NAVIGATOR_TASK_QUEUE": task_queue,
           "NAVIGATOR_CONFIG": str(tmp_path / "navigator.yaml")}
    result = await ainvoke(["explore", str(FIXTURE_REPO), "goal", "--model", GEMINI, "--detach", "--json"], env)
    assert result.exit_code == 0, result.stderr
    assert f"no worker on task queue '{task_queue}' answered the model check (no worker took it within 5s)" in result.stderr
    wid = json.loads(result.stdout)["workflow_id"]
    await client.get_workflow_handle(wid).terminate("test done")
