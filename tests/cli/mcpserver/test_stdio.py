"""``navigator mcp`` over stdio, spawned by the official MCP client, on its own embedded Temporal server.

This is the path a coding agent takes (``claude mcp add navigator -- navigator mcp``): no
Temporal configured, so the server starts the embedded dev server and an in-process worker
for its lifetime and stops both when the client closes stdin.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import IO

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import stdio_client

from tests.support import TESTS
from tests.support.cli import FIXTURE_REPO
from tests.support.e2e import NAVIGATOR, Sandbox
from tests.support.mcp import TOOLS, Progress, processes_with_env, slow_script, stdio_params, texts, wait_finished

from durable_navigator.navtypes.flightplan import MIN_TOKEN_BUDGET
from durable_navigator.repomap.tokens import count_tokens
from durable_navigator.workers.devserver import port_in_use

GOAL = "why are tokens double-counted in budget enforcement?"
#: a cold embedded server, a cold parse cache and a loaded 2-core machine
CALL_TIMEOUT_S = 240


def _allowed_tree(tmp_path: Path) -> tuple[Path, Path]:
    """An allowed root holding a copy of the fixture repository and a link that leads out of it."""
    root = tmp_path / "allowed"
    repo = root / "budgetkit"
    shutil.copytree(FIXTURE_REPO, repo)
    (root / "escape").symlink_to(FIXTURE_REPO.parent)  # inside the root by name, outside by target
    return root, repo


async def test_stdio_server_lists_explores_and_refuses(tmp_path: Path) -> None:
    box = Sandbox.create(tmp_path)
    root, repo = _allowed_tree(tmp_path)
    params = stdio_params(box.env(), tmp_path, "--allow-root", str(root))
    async with Client(params, read_timeout_seconds=CALL_TIMEOUT_S) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert set(listed) == TOOLS
        schema = listed["explore"].input_schema
        assert set(schema["required"]) == {"repo", "goal"}
        assert {"token_budget", "budget_usd", "model"} <= set(schema["properties"])
        assert schema["properties"]["budget_usd"]["anyOf"][0]["minimum"] == 0.000001  # one micro-dollar, as the CLI
        assert schema["properties"]["token_budget"]["anyOf"][0]["minimum"] == MIN_TOKEN_BUDGET
        assert {"run_id", "cost_usd", "stop_reason", "pack_tokens"} <= set(listed["explore"].output_schema["properties"])
        assert listed["explore"].description and "context pack" in listed["explore"].description
        assert listed["run_status"].annotations.read_only_hint is True
        templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
        assert templates == {"navigator://runs/{run_id}/context", "navigator://runs/{run_id}/answer",
                             "navigator://runs/{run_id}/report"}

        # an exploration returns its pack within the token budget, reporting each step on the way
        progress = Progress()
        budget = 1500
        result = await client.call_tool("explore", {"repo": str(repo), "goal": GOAL, "token_budget": budget},
                                        progress_callback=progress)
        assert not result.is_error, texts(result)
        out = result.structured_content
        pack = texts(result)[0]
        assert out["token_budget"] == budget and count_tokens(pack) == out["pack_tokens"] <= budget
        assert out["stop_reason"] in {"finalized", "max_iterations"} and out["cost_usd"] == 0.0
        assert pack.startswith(f"# Context: {GOAL}") and "## Repository map" in pack and "budgetkit" in pack
        assert json.loads(texts(result)[1])["run_id"] == out["run_id"]
        steps = progress.steps
        assert steps == sorted(set(steps)), steps  # strictly increasing, as MCP requires
        assert {float(s) for s in range(out["iterations"] + 1)} <= set(steps), progress.seen
        assert all("map " in (m or "") and "$" in (m or "") for _, _, m in progress.seen[:-1]), progress.seen
        assert progress.seen[-1][2].startswith(f"finished after {out['iterations']} steps")

        # the run is durable and readable afterwards: resources, run_status, list_runs
        run_id = out["run_id"]
        context = await client.read_resource(out["context_uri"])
        assert context.contents[0].text.startswith(f"# Context: {GOAL}")
        with pytest.raises(Exception, match="is an exploration"):  # an exploration has no answer
            await client.read_resource(f"navigator://runs/{out['run_id']}/answer")
        report = json.loads((await client.read_resource(out["report_uri"])).contents[0].text)
        assert run_id in json.dumps(report)
        status = await client.call_tool("run_status", {"run_id": run_id})
        assert status.structured_content["state"] == "completed"
        assert status.structured_content["outcome"]["stop_reason"] == out["stop_reason"]
        assert texts(status)[0] == pack  # the same pack, fitted to the same budget
        runs = (await client.call_tool("list_runs", {"repo": str(repo)})).structured_content["runs"]
        assert [r["run_id"] for r in runs] == [run_id] and runs[0]["goal"] == GOAL

        # refusals are tool errors with a clear line, and the server keeps serving
        (root / "empty").mkdir()
        latin1 = os.path.join(os.fsencode(root), b"caf\xe9")  # a folder whose own name is not UTF-8
        os.makedirs(os.path.join(latin1, b"src"))
        with open(os.path.join(latin1, b"src", b"a.py"), "w") as fh:
            fh.write("def alpha():\n    return 1\n")
        (root / "latin1-link").symlink_to(os.fsdecode(latin1))  # JSON text can only name it through a link
        for bad, words in [
            ({"repo": str(root / "latin1-link"), "goal": GOAL}, "rename that folder to a UTF-8 name"),  # #29
            ({"repo": str(FIXTURE_REPO), "goal": GOAL}, "outside the allowed roots"),
            ({"repo": str(root / "escape" / FIXTURE_REPO.name), "goal": GOAL}, "outside the allowed roots"),
            ({"repo": str(root / "missing"), "goal": GOAL}, "does not exist"),
            ({"repo": str(repo / "README.md"), "goal": GOAL}, "not a directory"),
            ({"repo": str(repo), "goal": GOAL, "budget_usd": -1}, "budget_usd"),
            ({"repo": str(repo), "goal": GOAL, "token_budget": 10}, "token_budget"),
            ({"repo": str(repo), "goal": GOAL, "model": "no-such-model"}, "model"),
            ({"repo": str(repo), "goal": GOAL, "budget_usd": 0.0000001}, "budget_usd"),  # #29: rounds to $0
            ({"repo": str(root / "empty"), "goal": GOAL}, "has no indexable files"),  # #29: as the CLI says
            ({"repo": str(repo), "goal": "why\x1b[2J"}, "control characters"),
        ]:
            refused = await client.call_tool("explore", bad)
            assert refused.is_error, bad
            assert words in texts(refused)[0], (bad, texts(refused))
        missing = await client.call_tool("run_status", {"run_id": "nav-nothing-00000000"})
        assert missing.is_error and "no run with id nav-nothing-00000000" in texts(missing)[0]
        assert set(t.name for t in (await client.list_tools()).tools) == TOOLS
    # the client closed stdin: the server stopped its worker and its embedded server, and left
    with anyio.fail_after(30):
        while processes_with_env("NAVIGATOR_CONFIG", str(tmp_path / "navigator.yaml")) or port_in_use(
                "127.0.0.1", box.port):
            await anyio.sleep(0.2)


@pytest.mark.parametrize("mode", ["auto", "legacy"])  # the 2026-07-28 envelope, and the handshake agents speak today
async def test_stdio_cancellation_stops_the_run_which_still_hands_over_its_pack(tmp_path: Path, mode: str) -> None:
    box = Sandbox.create(tmp_path)
    root, repo = _allowed_tree(tmp_path)
    script = slow_script(root / "slow.yaml", steps=20, stall_s=1.0)
    params = stdio_params(box.env(), tmp_path, "--allow-root", str(root))
    async with Client(params, read_timeout_seconds=CALL_TIMEOUT_S, mode=mode) as client:
        progress = Progress()
        call: dict = {}

        async def explore() -> None:
            call["result"] = await client.call_tool(
                "explore", {"repo": str(repo), "goal": GOAL, "model": f"scripted:{script}", "token_budget": 2000},
                progress_callback=progress)

        async with anyio.create_task_group() as tg:
            tg.start_soon(explore)
            await progress.reached(1, CALL_TIMEOUT_S)
            tg.cancel_scope.cancel()  # the client cancels the call: notifications/cancelled
        assert "result" not in call
        runs = (await client.call_tool("list_runs", {})).structured_content["runs"]
        assert len(runs) == 1
        status = await wait_finished(client, runs[0]["run_id"], CALL_TIMEOUT_S)
        outcome = status.structured_content["outcome"]
        assert outcome["stop_reason"] == "stopped", outcome
        assert "cancelled by the MCP client" in (outcome["stop_detail"] or "")
        assert outcome["iterations"] < 20
        pack = texts(status)[0]
        assert "## Repository map" in pack and count_tokens(pack) <= 2000
        # a stopped run can no longer be stopped: a tool error, not a crash
        again = await client.call_tool("stop_run", {"run_id": runs[0]["run_id"]})
        assert again.is_error and "already finished" in texts(again)[0]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
async def test_a_signal_stops_the_server_and_its_embedded_temporal(tmp_path: Path, sig: signal.Signals) -> None:
    """An MCP client escalates to SIGTERM when a server outlives its closed stdin; Ctrl-C in a terminal."""
    box = Sandbox.create(tmp_path)
    proc = subprocess.Popen([str(NAVIGATOR), "mcp"], cwd=tmp_path, env=box.env(), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        with anyio.fail_after(120):
            while not port_in_use("127.0.0.1", box.port):
                assert proc.poll() is None, proc.communicate()[1].decode()[-3000:]
                await anyio.sleep(0.2)
        proc.send_signal(sig)
        out, err = await anyio.to_thread.run_sync(lambda: proc.communicate(timeout=60))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err.decode()[-3000:]
    assert out == b""  # stdout is the protocol's alone
    assert "navigator mcp: stopped" in err.decode()
    assert not port_in_use("127.0.0.1", box.port)
    assert processes_with_env("NAVIGATOR_CONFIG", str(tmp_path / "navigator.yaml")) == []


async def test_an_agent_that_dies_leaves_its_run_to_the_next_server(tmp_path: Path) -> None:
    """The agent is killed mid-call: its stdio server sees stdin close and stops (not a cancellation);
    the run waits in the embedded server's database and the next ``navigator mcp`` finishes it."""
    box = Sandbox.create(tmp_path)
    root, repo = _allowed_tree(tmp_path)
    script = slow_script(root / "slow.yaml", steps=4, stall_s=1.0)
    arguments = {"repo": str(repo), "goal": GOAL, "model": f"scripted:{script}", "token_budget": 2000}
    agent = subprocess.Popen([sys.executable, "-m", "tests.support.mcp_client_proc", "stdio", json.dumps(arguments)],
                             cwd=TESTS.parent, env=box.env(), stdout=subprocess.PIPE, text=True)
    try:
        assert agent.stdout is not None
        with anyio.fail_after(CALL_TIMEOUT_S):
            while not (line := await anyio.to_thread.run_sync(agent.stdout.readline)).startswith("progress 1"):
                assert line, "the agent ended before the first step"
    finally:
        agent.send_signal(signal.SIGKILL)
        agent.wait(timeout=30)
    config = str(tmp_path / "navigator.yaml")
    with anyio.fail_after(60):  # the orphaned server noticed its closed stdin and left, embedded server included
        while processes_with_env("NAVIGATOR_CONFIG", config) or port_in_use("127.0.0.1", box.port):
            await anyio.sleep(0.2)
    async with Client(stdio_params(box.env(), tmp_path), read_timeout_seconds=CALL_TIMEOUT_S) as client:
        runs = (await client.call_tool("list_runs", {})).structured_content["runs"]
        assert len(runs) == 1
        status = await wait_finished(client, runs[0]["run_id"], CALL_TIMEOUT_S)
        outcome = status.structured_content["outcome"]
        assert outcome["stop_reason"] == "finalized" and outcome["iterations"] >= 4, outcome
        assert count_tokens(texts(status)[0]) <= 2000


async def test_a_cancellation_after_temporal_is_gone_leaves_the_server_serving(tmp_path: Path) -> None:
    """The stop a cancellation sends cannot be delivered (the Temporal server was killed): the call still
    ends cancelled, the server says why on stderr, answers the next calls with tool errors, and leaves."""
    box = Sandbox.create(tmp_path)
    root, repo = _allowed_tree(tmp_path)
    script = slow_script(root / "slow.yaml", steps=20, stall_s=1.0)
    temporal = subprocess.Popen([str(NAVIGATOR), "server"], cwd=tmp_path, env=box.env(), stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    errlog = (tmp_path / "mcp-stderr.txt").open("a")  # O_APPEND: the server's writes never land on each other
    try:
        with anyio.fail_after(120):
            while not port_in_use("127.0.0.1", box.port):
                assert temporal.poll() is None, "navigator server ended"
                await anyio.sleep(0.2)
        params = stdio_params(box.env(), tmp_path, "--allow-root", str(root))
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=CALL_TIMEOUT_S) as client:
            progress = Progress()
            call: dict = {}

            async def explore() -> None:
                call["result"] = await client.call_tool(
                    "explore", {"repo": str(repo), "goal": GOAL, "model": f"scripted:{script}"},
                    progress_callback=progress)

            async with anyio.create_task_group() as tg:
                tg.start_soon(explore)
                await progress.reached(1, CALL_TIMEOUT_S)
                _kill_temporal(tmp_path, temporal)
                tg.cancel_scope.cancel()
            assert "result" not in call
            for _ in range(150):  # the stop gave up: refused once the client's retries ran out, or its 15 s bound
                if "could not stop" in _read(errlog):
                    break
                await anyio.sleep(0.2)
            assert "after the client cancelled" in _read(errlog), _read(errlog)[-4000:]
            assert {t.name for t in (await client.list_tools()).tools} == TOOLS
            gone = await client.call_tool("list_runs", {})
            assert gone.is_error, texts(gone)
        with anyio.fail_after(60):  # stdin closed: the server still stops (its worker without a server) and leaves
            while processes_with_env("NAVIGATOR_CONFIG", str(tmp_path / "navigator.yaml")):
                await anyio.sleep(0.2)
        assert "Traceback" not in _read(errlog)
    finally:
        _kill_temporal(tmp_path, temporal)
        errlog.close()


def _read(log: IO[str]) -> str:
    return Path(log.name).read_text()


def _kill_temporal(tmp_path: Path, wrapper: subprocess.Popen) -> None:
    """SIGKILL ``navigator server`` and the dev server it started in a session of its own (found by the
    sandbox's config in its environment and ``start-dev`` on its command line: only ever ours)."""
    for pid in processes_with_env("NAVIGATOR_CONFIG", str(tmp_path / "navigator.yaml")):
        try:
            if b"start-dev" in Path(f"/proc/{pid}/cmdline").read_bytes():
                os.kill(pid, signal.SIGKILL)
        except (OSError, ProcessLookupError):
            pass
    if wrapper.poll() is None:
        os.killpg(wrapper.pid, signal.SIGKILL)
    wrapper.wait(timeout=30)
