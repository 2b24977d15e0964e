"""Every run command against a real dev server and a real worker (scripted decisions).

The CLI talks to the session's dev server through ``TEMPORAL_ADDRESS``; the
worker runs in the test's event loop with the production activities, a
scripted model provider (a model stand-in, not a Temporal mock) and the
engine the workflow tests use.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest_asyncio
from tests.support.cli import FIXTURE_REPO, ainvoke, json_of
from tests.support.navigator import ZOOM_BUDGET, ZOOM_OUT_CLI, ScriptProvider, engine_factory, token_counter
from temporalio.client import Client

from durable_navigator.activities.artifacts import LocalArtifactStore
from durable_navigator.activities.pricing_loader import TablePricer
from durable_navigator.activities.navigator import NavigatorActivities
from durable_navigator.workers.worker import build_worker

#: scripted decisions: zoom in, zoom out, zoom in again, ... then finalize
STEPS = [ZOOM_BUDGET, ZOOM_OUT_CLI, ZOOM_BUDGET, ZOOM_OUT_CLI, ZOOM_BUDGET]


@pytest_asyncio.fixture(loop_scope="session")
async def cli_env(client: Client, task_queue: str, tmp_path: Path) -> AsyncIterator[dict[str, str]]:
    """A running worker on a fresh task queue, and the env that points the CLI at it."""
    activities = NavigatorActivities(
        LocalArtifactStore(tmp_path / "artifacts"),
        pricer=TablePricer.load(),
        model_overrides={"scripted:inline": ScriptProvider(steps=list(STEPS))},
        engine_factory=engine_factory(),
        token_counter=token_counter(),
    )
    cfg = tmp_path / "navigator.yaml"
    cfg.write_text("temporal:\n  ui_url: http://127.0.0.1:8233\n")
    env = {
        "TEMPORAL_ADDRESS": client.service_client.config.target_host,
        "NAVIGATOR_TASK_QUEUE": task_queue,
        "NAVIGATOR_CONFIG": str(cfg),
        "NAVIGATOR_SENDER": "tester@cli",
    }
    async with build_worker(client, task_queue, activities=activities):
        yield env


async def _start(env: dict[str, str], tmp_path: Path, *extra: str) -> str:
    result = await ainvoke(
        ["explore", str(FIXTURE_REPO), "why are tokens double-counted?", "--model", "scripted:inline",
         "--detach", "--json", "--out", str(tmp_path / "out"), *extra],
        env,
    )
    data = json_of(result)
    assert set(data) == {"workflow_id", "ui_url", "task_queue"}
    assert data["workflow_id"].startswith("nav-navigator-repo-")
    assert data["ui_url"] == f"http://127.0.0.1:8233/namespaces/default/workflows/{data['workflow_id']}"
    return str(data["workflow_id"])


async def _status_until(env: dict[str, str], wid: str, predicate: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    for _ in range(150):
        row = json_of(await ainvoke(["status", wid, "--json"], env))
        if predicate(row):
            return row
        await asyncio.sleep(0.2)
    raise AssertionError(f"status of {wid} never matched; last: {row}")


def _awaiting(turn: int) -> Callable[[dict[str, Any]], bool]:
    return lambda row: bool(row["report"]) and row["report"]["awaiting_turn"] == turn


async def test_interactive_run_driven_by_signal_commands(cli_env: dict[str, str], tmp_path: Path) -> None:
    env = cli_env
    wid = await _start(env, tmp_path, "--interactive")
    row = await _status_until(env, wid, _awaiting(1))
    assert {"workflow_id", "run_id", "status", "navigator_status", "repo", "cost_usd", "iteration",
            "start_time", "close_time", "goal", "ui_url", "report"} <= set(row)
    assert row["status"] == "running" and row["goal"] == "why are tokens double-counted?"
    assert row["report"]["proposed_diff"], row["report"]

    # a running run is listed under the Temporal status the table shows
    running = json_of(await ainvoke(["ls", "--json", "--status", "running"], env))
    assert wid in {r["workflow_id"] for r in running} and {r["status"] for r in running} == {"running"}

    # a verdict the run would ignore is refused, loudly: exit 2, what is pending instead
    wrong = await ainvoke(["approve", wid, "--turn", "99"], env)
    assert wrong.exit_code == 2, (wrong.stdout, wrong.stderr)
    assert "turn 99 is not awaiting a verdict; turn 1 is" in wrong.stderr
    plan = await ainvoke(["reject", wid, "--turn", "1", "--plan", "-f", "no"], env)
    assert plan.exit_code == 2 and "the stage plan (round 1) is not awaiting a verdict" in plan.stderr

    approved = await ainvoke(["approve", wid], env)
    assert approved.exit_code == 0 and approved.stdout.strip() == f"{wid}: approve applied to turn 1"
    again = await ainvoke(["approve", wid, "--turn", "1"], env)
    # turn 2 may or may not be proposed yet: either way turn 1 is answered and the repeat refused
    assert again.exit_code == 2 and re.search(r"refused by \S+: (turn 1 is not awaiting a verdict; turn 2 is|no turn "
                                              r"is awaiting a verdict, so turn 1 cannot be answered)", again.stderr)
    await _status_until(env, wid, _awaiting(2))
    rejected = json_of(await ainvoke(["reject", wid, "-f", "look at the ledger instead", "--json"], env))
    assert rejected == {"workflow_id": wid, "verdict": "reject", "turn": 2, "kind": "turn", "applied": True,
                        "detail": "reject applied to turn 2"}
    await _status_until(env, wid, _awaiting(3))

    log = json_of(await ainvoke(["log", wid, "--json"], env))
    verdicts = [e["verdict"] for e in log["entries"] if e["verdict"]]
    assert verdicts[:2] == ["approve", "reject"], log["entries"]
    assert any(e["feedback"] == "look at the ledger instead" for e in log["entries"])
    human_log = await ainvoke(["log", wid], env)
    assert human_log.exit_code == 0
    assert "step 1 · update_flight_plan · approve · $0.0000" in human_log.stdout, human_log.stdout
    assert "feedback: look at the ledger instead" in human_log.stdout

    stopped = await ainvoke(["stop", wid, "--reason", "enough for the test"], env)
    assert stopped.exit_code == 0
    result = json_of(await ainvoke(["result", wid, "--wait", "--json"], env))
    assert result["stop_reason"] == "stopped" and result["workflow_id"] == wid
    assert Path(result["context_path"]).is_file() and Path(result["report_path"]).is_file()
    assert result["ui_url"].endswith(wid)
    human = await ainvoke(["result", wid], env)
    assert human.exit_code == 0 and "context pack:" in human.stdout

    closed = json_of(await ainvoke(["status", wid, "--json"], env))
    assert closed["status"] == "completed" and closed["report"] is None
    assert closed["result"]["stop_reason"] == "stopped" and closed["result"]["context_path"] == result["context_path"]
    # the log of a finished run comes from its report.json: no worker needed
    finished_log = json_of(await ainvoke(["log", wid, "--json"], env))
    assert [e["verdict"] for e in finished_log["entries"] if e["verdict"]][:2] == ["approve", "reject"]
    late = await ainvoke(["approve", wid, "--turn", "3"], env)
    assert late.exit_code == 4 and "already closed" in late.stderr

    rows: list[dict[str, Any]] = []
    for _ in range(50):  # visibility is eventually consistent
        # a relative path works too: ls resolves it like explore does
        rows = json_of(await ainvoke(["ls", "--json", "--repo", os.path.relpath(FIXTURE_REPO)], env))
        if any(r["workflow_id"] == wid and r["navigator_status"] == "completed" for r in rows):
            break
        await asyncio.sleep(0.2)
    mine = next(r for r in rows if r["workflow_id"] == wid)
    assert mine["repo"] == str(FIXTURE_REPO) and mine["status"] == "completed"
    filtered = json_of(await ainvoke(["ls", "--json", "--status", "completed", "--limit", "5"], env))
    assert all(r["navigator_status"] == "completed" for r in filtered)


async def test_mode_and_budget_signals_and_unknown_ids(cli_env: dict[str, str], tmp_path: Path) -> None:
    env = cli_env
    wid = await _start(env, tmp_path, "--interactive", "--budget-usd", "0.10")
    await _status_until(env, wid, _awaiting(1))
    raised = json_of(await ainvoke(["budget", wid, "0.25", "--json"], env))
    assert raised["signal"] == "raise_budget" and raised["payload"]["add_usd"] == "0.25"
    await _status_until(env, wid, lambda row: bool(row["report"]) and row["report"]["budget_usd"] == "$0.3500")
    switched = await ainvoke(["mode", wid, "autonomous"], env)
    assert switched.exit_code == 0
    await ainvoke(["approve", wid], env)  # the pending turn; autonomous from here on
    result = await ainvoke(["result", wid, "--wait"], env)
    assert result.exit_code == 0, result.stderr
    assert "finalized" in result.stdout

    missing = await ainvoke(["status", "nav-does-not-exist"], env)
    assert missing.exit_code == 4 and "no run with id nav-does-not-exist" in missing.stderr
    no_verdict = await ainvoke(["approve", wid], env)
    assert no_verdict.exit_code == 4 and f"run {wid} is closed" in no_verdict.stderr


async def test_explore_waits_for_a_worker_then_follows_to_the_result(
    client: Client, task_queue: str, tmp_path: Path
) -> None:
    """With TEMPORAL_ADDRESS set, explore runs no worker itself: it says so, waits, and finishes.

    The CLI runs as a process and the worker starts only once the CLI has said it is waiting
    (reading its stderr), so the order is certain whatever the machine's load; a fixed sleep
    here once let a slow CLI's first status poll be answered by the late worker.
    """
    from tests.support.e2e import NAVIGATOR

    (tmp_path / "none.yaml").write_text("{}\n")
    env = {**os.environ, "TEMPORAL_ADDRESS": client.service_client.config.target_host,
           "NAVIGATOR_TASK_QUEUE": task_queue, "NAVIGATOR_CONFIG": str(tmp_path / "none.yaml")}
    proc = await asyncio.create_subprocess_exec(
        str(NAVIGATOR), "explore", str(FIXTURE_REPO), "goal", "--model", "offline", "--out", str(tmp_path / "out"),
        env=env, cwd=tmp_path, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    assert proc.stderr is not None and proc.stdout is not None
    seen: list[str] = []
    waiting = f"waiting for a worker on task queue {task_queue!r}"
    try:
        while not any(waiting in line for line in seen):
            line = await asyncio.wait_for(proc.stderr.readline(), timeout=120)
            assert line, f"explore ended before it waited for a worker: {seen}"
            seen.append(line.decode())
        assert proc.returncode is None  # still waiting, no worker yet
        activities = NavigatorActivities(
            LocalArtifactStore(tmp_path / "artifacts"), pricer=TablePricer.load(),
            engine_factory=engine_factory(), token_counter=token_counter(),
        )
        async with build_worker(client, task_queue, activities=activities):
            out, rest = await asyncio.wait_for(proc.communicate(), timeout=120)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, "".join(seen) + rest.decode()
    assert "context written to " in out.decode()


async def test_no_credential_reaches_history_or_output(client: Client, cli_env: dict[str, str], tmp_path: Path) -> None:
    secret = "AIza-cli-history-canary-123456"
    env = {**cli_env, "GEMINI_API_KEY": secret, "GOOGLE_API_KEY": secret}
    wid = await _start(env, tmp_path)
    result = await ainvoke(["result", wid, "--wait", "--json"], env)
    assert result.exit_code == 0
    history = await client.get_workflow_handle(wid).fetch_history()
    assert secret.encode() not in history.to_json().encode()
    for args in (["status", wid, "--json"], ["config", "show", "--json"]):
        shown = await ainvoke(args, env)
        assert secret not in shown.stdout + shown.stderr
