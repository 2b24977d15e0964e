"""Servers this tool starts: recorded, found from other terminals, outliving `explore`, stopped on
request or when idle — and never another user's server."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest

from durable_navigator.workers.devserver import free_port, port_in_use
from durable_navigator.workers.servers import (
    ServerRecord,
    find_record,
    live_records,
    port_owner_uid,
    process_start_time,
    record_for_address,
    remove_record,
    write_record,
)
from tests.support.cli import FIXTURE_REPO
from tests.support.e2e import NAVIGATOR, Sandbox

GOAL = "why are tokens double-counted?"
#: the system interpreter (readable by every user, unlike a venv under /root)
SYSTEM_PYTHON = shutil.which("python3", path="/usr/bin:/bin")


def _record(pid: int, db: Path, port: int, **update: object) -> ServerRecord:
    data = dict(pid=pid, pid_start=process_start_time(pid), mode="background", grpc=f"127.0.0.1:{port}",
                ui="http://127.0.0.1:1", db=str(db), uid=os.getuid(), started_at=time.time(), idle_timeout_s=60.0)
    return ServerRecord.model_validate({**data, **update})


def test_records_are_found_by_database_and_stale_ones_pruned(tmp_path: Path) -> None:
    state = tmp_path / "state"
    mine = _record(os.getpid(), tmp_path / "a.db", 7001)
    write_record(mine, state)
    dead = subprocess.Popen(["true"])
    dead.wait()
    write_record(_record(dead.pid, tmp_path / "b.db", 7002, pid_start=None), state)
    write_record(_record(os.getpid(), tmp_path / "c.db", 7003, pid_start=(mine.pid_start or 0) + 1), state)  # recycled
    write_record(_record(os.getpid(), tmp_path / "d.db", 7004, uid=os.getuid() + 1), state)  # another user's
    assert live_records(state) == [mine]
    assert sorted(p.name for p in (state / "servers").iterdir()) == ["127.0.0.1-7001.json"]
    assert find_record(tmp_path / "a.db", state) == mine and find_record(tmp_path / "b.db", state) is None
    assert record_for_address("localhost:7001", state) == mine
    # a record is removed only by its own writer
    remove_record(_record(os.getpid() + 1, tmp_path / "a.db", 7001), state)
    assert live_records(state) == [mine]
    remove_record(mine, state)
    assert live_records(state) == []


def test_port_owner_of_a_listener_of_ours(tmp_path: Path) -> None:
    port = free_port()
    proc = subprocess.Popen([str(SYSTEM_PYTHON), "-c", _LISTENER, str(port)], stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"listening"
        assert port_owner_uid("127.0.0.1", port) == os.getuid()
        assert port_owner_uid("127.0.0.2", port) is None  # bound to 127.0.0.1 only
    finally:
        proc.kill()
        proc.wait()


_LISTENER = """
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as every server does (the port is reserved)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen()
print("listening", flush=True)
time.sleep(600)
"""


def _run(box: Sandbox, *args: str, env: dict[str, str], timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(NAVIGATOR), *args], cwd=box.root, env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_explore_leaves_a_background_server_that_others_find_and_stop(tmp_path: Path) -> None:
    box = Sandbox.create(tmp_path)
    env = box.env(idle_timeout_s=600)
    try:
        explored = _run(box, "explore", str(FIXTURE_REPO), GOAL, "--max-iterations", "2", "--out",
                        str(tmp_path / "out"), env=env)
        assert explored.returncode == 0, explored.stderr[-3000:]
        err = explored.stderr
        assert f"started a background Temporal server: gRPC 127.0.0.1:{box.port} · Web UI " \
               f"http://127.0.0.1:{box.ui_port}" in err
        assert "it keeps running after this command, so the Web UI link keeps working; it stops after 10 min" in err
        assert "the Web UI link works while the background server runs" in err
        link = re.search(r"^Web UI: (\S+)$", explored.stdout, re.M)
        assert link and link.group(1).startswith(box.ui_prefix), explored.stdout
        wid = link.group(1).rsplit("/", 1)[1]

        # the command has ended: the server still runs and the printed link answers
        assert port_in_use("127.0.0.1", box.port)
        with urllib.request.urlopen(link.group(1), timeout=30) as page:  # loopback only
            assert page.status == 200
        status = _run(box, "server", "status", "--json", env=env, timeout=60)
        assert status.returncode == 0, status.stderr
        [record] = json.loads(status.stdout)
        assert record["mode"] == "background" and record["grpc"] == f"127.0.0.1:{box.port}"
        assert record["idle_timeout_s"] == 600

        # other commands (other processes) find it; a finished run's log needs no worker
        listed = _run(box, "ls", "--json", env=env, timeout=60)
        assert listed.returncode == 0 and wid in {r["workflow_id"] for r in json.loads(listed.stdout)}
        logged = _run(box, "log", wid, env=env, timeout=60)
        assert logged.returncode == 0 and "step 0 · planning_analysis" in logged.stdout, logged.stderr
        result = _run(box, "result", wid, env=env, timeout=60)
        assert result.returncode == 0 and f"Web UI: {link.group(1)}" in result.stdout

        stopped = _run(box, "server", "stop", env=env, timeout=90)
        assert stopped.returncode == 0, stopped.stderr
        assert f"stopped the background server on 127.0.0.1:{box.port} (pid {record['pid']})" in stopped.stdout
        assert not port_in_use("127.0.0.1", box.port)
        after = _run(box, "server", "status", env=env, timeout=60)
        assert after.returncode == 3 and "no navigator server is running" in after.stderr
        assert _run(box, "ls", env=env, timeout=60).returncode == 3
    finally:
        _run(box, "server", "stop", "--all", env=env, timeout=90)


def test_background_server_stops_when_idle(tmp_path: Path) -> None:
    box = Sandbox.create(tmp_path)
    env = box.env()
    started = _run(box, "server", "--background", "--idle-timeout", "3", "--json", env=env, timeout=120)
    try:
        assert started.returncode == 0, started.stderr
        record = json.loads(started.stdout)
        assert record["grpc"] == f"127.0.0.1:{box.port}" and record["idle_timeout_s"] == 3
        deadline = time.monotonic() + 90
        while port_in_use("127.0.0.1", box.port) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not port_in_use("127.0.0.1", box.port), "the idle background server is still up"
        assert _run(box, "server", "status", env=env, timeout=60).returncode == 3
        log = Path(box.root / "xdg-state" / "durable-navigator" / f"background-{box.port}.log").read_text()
        assert "idle for 3s: stopping" in log
    finally:
        _run(box, "server", "stop", "--all", env=env, timeout=90)


def test_a_foreground_server_on_other_ports_is_found_by_other_terminals(tmp_path: Path) -> None:
    box = Sandbox.create(tmp_path)
    env = box.env()
    port, ui_port = free_port(), free_port()
    server = subprocess.Popen([str(NAVIGATOR), "server", "--port", str(port), "--ui-port", str(ui_port)],
                              cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        shown = "".join(iter(server.stdout.readline, "Ctrl-C to stop.\n"))
        assert "Other terminals: navigator commands of this user find this server" in shown
        assert f"export TEMPORAL_ADDRESS=127.0.0.1:{port} TEMPORAL_UI_URL=http://127.0.0.1:{ui_port}" in shown
        # the configured port is another one: commands still find the server of this database
        assert _run(box, "ls", env=env, timeout=60).returncode == 0
        missing = _run(box, "ui", "nav-some-run", env=env, timeout=60)
        assert missing.returncode == 4 and "no run with id nav-some-run" in missing.stderr, missing.stderr
        detached = _run(box, "explore", str(FIXTURE_REPO), GOAL, "--detach", "--json", "--id", "nav-detached-1",
                        "--out", str(tmp_path / "out"), env=env, timeout=120)
        assert detached.returncode == 0, detached.stderr
        assert json.loads(detached.stdout)["ui_url"] == \
            f"http://127.0.0.1:{ui_port}/namespaces/default/workflows/nav-detached-1"
        assert f"Web UI: http://127.0.0.1:{ui_port}/namespaces/default/workflows/nav-detached-1" in detached.stderr
        ui = _run(box, "ui", "nav-detached-1", env=env, timeout=60)
        assert ui.stdout.strip() == f"http://127.0.0.1:{ui_port}/namespaces/default/workflows/nav-detached-1"
        twice = _run(box, "server", env=env, timeout=60)
        assert twice.returncode == 2 and "a navigator server already serves" in twice.stderr
    finally:
        server.send_signal(signal.SIGINT)
        assert server.wait(timeout=60) == 0
    assert not port_in_use("127.0.0.1", port)
    assert _run(box, "server", "status", env=env, timeout=60).returncode == 3


@pytest.mark.skipif(os.getuid() != 0 or SYSTEM_PYTHON is None,
                    reason="needs root to run a listener as another user (uid 65534)")
def test_another_users_server_is_never_used(tmp_path: Path) -> None:
    box = Sandbox.create(tmp_path)
    env = box.env()
    stranger = subprocess.Popen([str(SYSTEM_PYTHON), "-c", _LISTENER, str(box.port)], stdout=subprocess.PIPE,
                                user=65534, group=65534, cwd="/")
    try:
        assert stranger.stdout is not None and stranger.stdout.readline().strip() == b"listening"
        assert port_owner_uid("127.0.0.1", box.port) == 65534
        refused = _run(box, "ls", env=env, timeout=60)
        assert refused.returncode == 3
        assert f"127.0.0.1:{box.port} is another user's server (uid 65534)" in refused.stderr
        explored = _run(box, "explore", str(FIXTURE_REPO), GOAL, "--max-iterations", "1", "--planning", "off",
                        "--out", str(tmp_path / "out"), env=env)
        assert explored.returncode == 0, explored.stderr[-3000:]
        used = re.search(r"embedded Temporal started: gRPC 127\.0\.0\.1:(\d+)", explored.stderr)
        assert used and int(used.group(1)) != box.port, explored.stderr
    finally:
        stranger.kill()
        stranger.wait()


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text in (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _kill_all(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _until(check: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def _explore_killed_once_its_server_listens(box: Sandbox, env: dict[str, str]) -> None:
    """Start `explore` and SIGKILL it (no cleanup of any kind) as soon as its server's port is open."""
    err = box.root / "explore.stderr"
    with err.open("wb") as sink:
        proc = subprocess.Popen([str(NAVIGATOR), "explore", str(FIXTURE_REPO), GOAL, "--max-iterations", "2",
                                 "--out", str(box.root / "out")], cwd=box.root, env=env,
                                stdout=subprocess.DEVNULL, stderr=sink)
    try:
        assert _until(lambda: port_in_use("127.0.0.1", box.port, 0.2) or proc.poll() is not None, 180)
        # once in CI (stop 37) explore exited 3 before its server listened, its stderr discarded: kept now
        assert proc.poll() is None, f"explore ended ({proc.returncode}) before it could be killed: " \
                                    f"{err.read_text(errors='replace')[-2000:]}"
    finally:
        proc.kill()
        proc.wait()


def test_a_killed_explore_takes_its_command_scoped_server_along(tmp_path: Path) -> None:
    """embedded.idle_timeout_s 0: the server lives as long as the command, even one killed by SIGKILL.

    Before: the server (its own session, stopped only by the command's cleanup) ran on with no idle
    watcher at all — after a test's timeout killed `explore`, for 98 minutes.
    """
    box = Sandbox.create(tmp_path)
    try:
        _explore_killed_once_its_server_listens(box, box.env(idle_timeout_s=0))
        assert _until(lambda: not port_in_use("127.0.0.1", box.port, 0.2), 30), "the server outlived explore"
        assert _until(lambda: _processes_mentioning(f"--port {box.port}") == [], 30)
    finally:
        _kill_all(_processes_mentioning(f"--port {box.port}"))


def test_a_killed_explore_leaves_a_background_server_that_still_stops_when_idle(tmp_path: Path) -> None:
    """The idle watcher lives in the background supervisor: the command that started it may die."""
    box = Sandbox.create(tmp_path)
    env = box.env(idle_timeout_s=4)
    try:
        _explore_killed_once_its_server_listens(box, env)
        # idle 4 s after its last use (the killed command may have polled: a poller counts for 90 s)
        assert _until(lambda: not port_in_use("127.0.0.1", box.port, 0.2), 150), "the idle server is still up"
        assert _until(lambda: _processes_mentioning(f"--port {box.port}") == [], 30)
        log = (box.root / "xdg-state" / "durable-navigator" / f"background-{box.port}.log").read_text()
        assert "idle for 4s: stopping" in log
    finally:
        _kill_all(_processes_mentioning(f"--port {box.port}"))


def test_a_killed_background_supervisor_takes_its_server_along(tmp_path: Path) -> None:
    """The server never runs without its idle watcher: SIGKILL of the supervisor stops it too."""
    box = Sandbox.create(tmp_path)
    env = box.env()
    try:
        started = _run(box, "server", "--background", "--idle-timeout", "600", "--json", env=env, timeout=150)
        assert started.returncode == 0, started.stderr
        record = json.loads(started.stdout)
        os.kill(record["pid"], signal.SIGKILL)
        assert _until(lambda: not port_in_use("127.0.0.1", box.port, 0.2), 30), "the server outlived its supervisor"
        assert _until(lambda: _processes_mentioning(f"--port {box.port}") == [], 30)
        assert _run(box, "server", "status", env=env, timeout=60).returncode == 3
    finally:
        _kill_all(_processes_mentioning(f"--port {box.port}"))


def test_a_stop_request_reaches_a_background_server_still_starting(tmp_path: Path) -> None:
    """SIGTERM (`server stop`, or a command that gave up waiting) stops a supervisor whose server never answers.

    Before: the request only set an event the startup wait never looked at, so the supervisor (and its
    server) went on until its own startup deadline, and the command that gave up waited for it unbounded.
    """
    from durable_navigator.workers.background import BackgroundOptions
    from durable_navigator.workers.devserver import DevServerConfig

    state = tmp_path / "state"
    options = BackgroundOptions(
        server=DevServerConfig(port=free_port(), ui_port=free_port(), headless=True, db_filename=tmp_path / "t.db",
                               startup_timeout_s=300),
        task_queue="navigator", idle_timeout_s=600, state_dir=state)
    supervisor = subprocess.Popen(options.argv(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  start_new_session=True)
    port = options.server.port
    try:
        # freeze the server as soon as it exists: it never answers, the supervisor waits for it
        assert _until(lambda: bool(_temporal_children(supervisor.pid)), 120), "no server was started"
        for pid in _temporal_children(supervisor.pid):
            os.kill(pid, signal.SIGSTOP)
        time.sleep(2)
        assert supervisor.poll() is None
        sent = time.monotonic()
        supervisor.terminate()
        out, _ = supervisor.communicate(timeout=60)
        # the frozen server's stop (SIGINT, shutdown_timeout_s, SIGKILL) and no more: not the 300 s startup wait
        assert time.monotonic() - sent < options.server.shutdown_timeout_s + 15, out
        assert supervisor.returncode == 0 and "stop requested while starting" in out, out
        assert not list((state / "servers").glob("*.json"))
        assert _until(lambda: _processes_mentioning(f"--port {port}") == [], 30)
    finally:
        supervisor.kill()
        _kill_all(_processes_mentioning(f"--port {port}"))


def _temporal_children(pid: int) -> list[int]:
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []
    return [int(c) for c in children if "temporal" in Path(f"/proc/{c}/cmdline").read_bytes().split(b"\0")[0].decode()
            or b"start-dev" in Path(f"/proc/{c}/cmdline").read_bytes()]
