"""The real ``navigator`` process never aborts at exit, and its exit codes are exact.

Before ``cli/exits.py``, the last Temporal RPC of a command raced interpreter
finalization (the SDK's Rust thread re-entering a finalizing Python): about a
third of ``status --json`` calls on a finished run ended with 134 / 139 after
printing a correct result. These tests run the installed console script as
subprocesses, many times, against the session's dev server and a worker, and
count every exit code.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest_asyncio
from tests.support.cli import FIXTURE_REPO
from tests.support.e2e import NAVIGATOR, Sandbox
from temporalio.client import Client

from durable_navigator.activities.artifacts import LocalArtifactStore
from durable_navigator.activities.pricing_loader import TablePricer
from durable_navigator.activities.navigator import NavigatorActivities
from durable_navigator.repomap import RepoMap
from durable_navigator.workers.devserver import port_in_use
from durable_navigator.workers.worker import build_worker

#: how many times each read command runs on the finished run (aborted ~1 in 3 before the fix,
#: so 0 aborts in this many calls is far from luck: 0.67**24 < 1e-4 per command)
REPEATS = 24
#: subprocesses at once (the machine has 2 cores; the server and worker need some too)
PARALLEL = 2
#: what an abort looks like, whatever the exit code
FATAL = re.compile(r"Fatal Python error|Segmentation fault|PyGILState_Release")


@dataclass
class Call:
    """One finished CLI process."""

    args: tuple[str, ...]
    code: int
    out: str
    err: str

    @property
    def aborted(self) -> bool:
        """Killed by a signal (negative code), 134/139 from the shell, or Python's fatal-error text."""
        return self.code < 0 or self.code in (134, 139) or bool(FATAL.search(self.err))


def _env(tmp_path: Path, address: str, task_queue: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPORAL_", "NAVIGATOR_", "GEMINI_", "GOOGLE_"))}
    (tmp_path / "navigator.yaml").write_text("{}\n")
    env.update(
        TEMPORAL_ADDRESS=address, NAVIGATOR_TASK_QUEUE=task_queue, NAVIGATOR_CONFIG=str(tmp_path / "navigator.yaml"),
        XDG_STATE_HOME=str(tmp_path / "xdg-state"), XDG_CACHE_HOME=str(tmp_path / "xdg-cache"), COLUMNS="200",
    )
    return env


async def _run(args: list[str], env: dict[str, str], cwd: Path) -> Call:
    proc = await asyncio.create_subprocess_exec(
        str(NAVIGATOR), *args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=240)
    assert proc.returncode is not None
    return Call(tuple(args), proc.returncode, out.decode(), err.decode())


async def _run_all(calls: list[list[str]], env: dict[str, str], cwd: Path) -> list[Call]:
    gate = asyncio.Semaphore(PARALLEL)

    async def one(args: list[str]) -> Call:
        async with gate:
            return await _run(args, env, cwd)

    return list(await asyncio.gather(*(one(a) for a in calls)))


@pytest_asyncio.fixture(loop_scope="session")
async def worker_env(client: Client, task_queue: str, tmp_path: Path) -> AsyncIterator[dict[str, str]]:
    """A production-shaped worker (offline model, real engine with a private cache) + the CLI's env."""
    activities = NavigatorActivities(
        LocalArtifactStore(tmp_path / "artifacts"),
        pricer=TablePricer.load(),
        engine_factory=lambda root: RepoMap.open(root, cache_dir=tmp_path / "repomap-cache"),
    )
    async with build_worker(client, task_queue, activities=activities):
        yield _env(tmp_path, client.service_client.config.target_host, task_queue)


async def test_many_cli_processes_never_abort_and_keep_exact_codes(worker_env: dict[str, str], tmp_path: Path) -> None:
    explores = await _run_all(
        [["explore", str(FIXTURE_REPO), f"how is the budget enforced? ({i})", "--json", "--max-iterations", "3",
          "--out", str(tmp_path / "out")] for i in range(3)],
        worker_env, tmp_path,
    )
    for call in explores:
        assert call.code == 0 and not call.aborted, (call.code, call.err[-2000:])
    wid = json.loads(explores[0].out)["workflow_id"]

    reads = [["status", wid, "--json"]] * REPEATS + [["result", wid, "--wait", "--json"]] * REPEATS
    reads += [["status", wid, "--watch", "--json"], ["log", wid, "--json"], ["ls", "--json"]] * 2
    # error paths keep their documented codes too: 4 unknown run, 2 usage error
    errors = [["status", "nav-no-such-run", "--json"]] * 4 + [["result", "nav-no-such-run"]] * 2 + [["status"]] * 2
    calls = await _run_all(reads + errors, worker_env, tmp_path)

    codes = Counter((c.args[0], c.code) for c in calls)
    assert [c for c in calls if c.aborted] == [], codes
    for call in calls[: 2 * REPEATS]:
        assert call.code == 0, (call.args, call.code, call.err[-1000:])
        assert json.loads(call.out)["workflow_id"] == wid  # the output is whole: flushed before leaving
    for call in calls[len(reads):]:
        expected = 2 if call.args == ("status",) else 4
        assert call.code == expected, (call.args, call.code, call.err)
        assert call.out == "" and call.err.strip()
    assert codes[("status", 4)] == 4 and codes[("result", 4)] == 2 and codes[("status", 2)] == 2


def _kill_mentioning(text: str) -> None:
    """SIGKILL the processes whose command line contains ``text`` (only ever this test's: a free port)."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text in (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"):
                    os.kill(int(entry.name), signal.SIGKILL)
            except (OSError, ProcessLookupError):
                continue


def _processes_mentioning(text: str) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if text in cmdline:
                found.append(cmdline)
    return found


def test_embedded_explore_stops_its_server_and_flushes_its_logs(tmp_path: Path) -> None:
    """The default path (embedded server + in-process worker) leaves nothing behind at exit."""
    box = Sandbox.create(tmp_path)
    try:
        proc = subprocess.run(
            [str(NAVIGATOR), "--log-level", "info", "explore", str(FIXTURE_REPO), "where is the ledger?", "--json",
             "--max-iterations", "2", "--out", str(tmp_path / "out")],
            cwd=tmp_path, env=box.env(), capture_output=True, text=True, timeout=240,
        )
    except subprocess.TimeoutExpired as exc:
        # a hang: keep what it printed for the report, and leave no orphaned dev server behind
        # (one did, for 98 minutes, after the only timeout seen)
        leftovers = _processes_mentioning(f"--port {box.port}")
        _kill_mentioning(f"--port {box.port}")
        raise AssertionError(f"explore hung; stderr tail: {(exc.stderr or b'')[-3000:]!r}; "
                             f"leftover processes: {leftovers}") from exc
    assert proc.returncode == 0 and not FATAL.search(proc.stderr), proc.stderr[-3000:]
    assert json.loads(proc.stdout)["stop_reason"] in {"finalized", "max_iterations"}
    # structlog's line from the start of the command reached stderr before the process left
    assert "starting embedded Temporal" in proc.stderr
    # the embedded server was stopped by the command, not left to a finalizer
    assert not port_in_use("127.0.0.1", box.port)
    assert _processes_mentioning(f"--port {box.port}") == []


_EXIT_PROBE = """
import atexit, logging, sys, threading, time
from durable_navigator.cli.exits import run_and_exit

logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(message)s")
atexit.register(lambda: print("atexit ran", flush=True))
# a non-daemon thread still working at exit is joined, as the interpreter would
threading.Thread(target=lambda: (time.sleep(0.3), print("thread done"))).start()

def app():
    logging.getLogger("probe").info("logged before exit")
    print("output before exit", end="")  # no newline, no flush: finish() flushes it
    {action}

run_and_exit(app)
"""


def test_run_and_exit_keeps_codes_and_runs_the_orderly_part_of_shutdown() -> None:
    cases = {
        "raise SystemExit(3)": 3,
        "raise SystemExit(None)": 0,
        "return None": 0,
        "raise KeyboardInterrupt": 130,
        "raise SystemExit('went wrong')": 1,
        "raise RuntimeError('a bug')": 1,
    }
    stderr = {}
    for action, expected in cases.items():
        proc = subprocess.run([sys.executable, "-c", _EXIT_PROBE.replace("{action}", action)],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == expected, (action, proc.returncode, proc.stderr)
        assert proc.stdout.startswith("output before exit") and "thread done" in proc.stdout, (action, proc.stdout)
        assert proc.stdout.rstrip().endswith("atexit ran"), (action, proc.stdout)
        assert "logged before exit" in proc.stderr
        stderr[action] = proc.stderr
    assert "went wrong" in stderr["raise SystemExit('went wrong')"]
    assert "RuntimeError: a bug" in stderr["raise RuntimeError('a bug')"]  # the traceback, as uncaught


def test_explore_on_a_server_that_never_answers_exits_3_in_time_and_leaves_nothing(tmp_path: Path) -> None:
    """A server too slow to come up (here: frozen by SIGSTOP once it exists) costs at most the startup timeout.

    Before: each readiness probe waited the SDK's own ~30 s whatever the deadline, so `explore` on a
    loaded machine could wait far beyond embedded.startup_timeout_s; and a server left behind by a
    killed command ran on for good.
    """
    box = Sandbox.create(tmp_path)
    env = {**box.env(), "NAVIGATOR_STARTUP_TIMEOUT_S": "8"}
    proc = subprocess.Popen(
        [str(NAVIGATOR), "explore", str(FIXTURE_REPO), "where is the ledger?", "--json", "--max-iterations", "2",
         "--out", str(tmp_path / "out")], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    frozen: list[int] = []
    try:
        deadline = time.monotonic() + 120
        while not frozen and proc.poll() is None and time.monotonic() < deadline:
            frozen = [pid for pid, cmd in _pids_mentioning(f"--port {box.port}") if "start-dev" in cmd]
            time.sleep(0.05)
        assert frozen, "explore started no server"
        for pid in frozen:
            os.kill(pid, signal.SIGSTOP)
        started = time.monotonic()
        _, err = proc.communicate(timeout=120)
        # the 8 s startup timeout, then the frozen server's stop (SIGINT, 15 s, SIGKILL): nothing longer
        assert time.monotonic() - started < 8 + 15 + 20, err[-2000:]
        assert proc.returncode == 3, err[-2000:]
        assert re.search(r"did not become ready on 127\.0\.0\.1:\d+ within 8s .*startup_timeout_s", err), err[-2000:]
        assert _processes_mentioning(f"--port {box.port}") == []
    finally:
        proc.kill()
        proc.communicate()
        _kill_mentioning(f"--port {box.port}")


def _pids_mentioning(text: str) -> list[tuple[int, str]]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if text in cmdline:
                found.append((int(entry.name), cmdline))
    return found
