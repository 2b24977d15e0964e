"""Durability from the CLI's side: the server goes away mid-run, `explore` exits 3 with how to
resume, and `navigator server` + `navigator worker` finish the same run."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from pathlib import Path

from tests.support.cli import FIXTURE_REPO
from tests.support.e2e import NAVIGATOR, Sandbox

from durable_navigator.workers.devserver import port_in_use

#: enough scripted turns that the run is still going when the server is stopped
TURNS = 80


def _script(path: Path) -> Path:
    lines = ["decisions:"]
    for i in range(TURNS):
        # a new rule every turn: an oscillating script would (rightly) end with loop_detected
        lines.append(f'  - {{action: update_flight_plan, reasoning: "turn {i}", '
                     f'updates: {{set_rules: [{{glob: "src/turn{i}/**", level: {2 + i % 2}}}]}}}}')
    path.write_text("\n".join(lines) + "\n")
    return path


def _server(box: Sandbox) -> subprocess.Popen[str]:
    proc = subprocess.Popen([str(NAVIGATOR), "server"], cwd=box.root, env=box.env(), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not port_in_use("127.0.0.1", box.port):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.2)
    return proc


def test_explore_survives_a_server_restart(tmp_path: Path) -> None:
    box = Sandbox.create(tmp_path)
    script = _script(tmp_path / "turns.yaml")
    server = _server(box)
    explore = subprocess.Popen(
        [str(NAVIGATOR), "explore", str(FIXTURE_REPO), "why?", "--model", f"scripted:{script}",
         "--max-iterations", str(TURNS), "--planning", "off", "--out", str(tmp_path / "out")],
        cwd=tmp_path, env=box.env(), text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    # stop the server once the run is under way (not after a fixed sleep: on a loaded machine
    # explore may not even have started the run by then)
    assert explore.stderr is not None
    seen = []
    for line in explore.stderr:
        seen.append(line)
        if re.match(r"step [1-9]\d* · ", line):
            break
    else:
        raise AssertionError("explore ended before its run got going: " + "".join(seen)[-2000:])
    server.send_signal(signal.SIGINT)
    assert server.wait(timeout=30) == 0
    _, rest = explore.communicate(timeout=120)
    err = "".join(seen) + rest
    assert explore.returncode == 3, err[-2000:]
    wid = re.search(r"workflows/(nav-\S+)", err).group(1)  # type: ignore[union-attr]
    assert f"lost Temporal at 127.0.0.1:{box.port} while following {wid}" in err
    assert "`navigator server` + `navigator worker`" in err

    server = _server(box)
    worker = subprocess.Popen([str(NAVIGATOR), "worker"], cwd=tmp_path, env=box.env(), text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        done = subprocess.run([str(NAVIGATOR), "result", wid, "--wait", "--json"], cwd=tmp_path,
                              env=box.env(), capture_output=True, text=True, timeout=240)
        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout)
        assert result["stop_reason"] == "max_iterations" and result["decisions"] == TURNS
        assert Path(result["context_path"]).is_file()
    finally:
        worker.send_signal(signal.SIGTERM)
        _, worker_err = worker.communicate(timeout=60)
        server.send_signal(signal.SIGINT)
        assert server.wait(timeout=30) == 0
    assert worker.returncode == 0, worker_err[-2000:]
    # the worker says what it ran (the start was logged by the first worker; a replay is silent)
    assert f"run finished: NavigatorWorkflow {wid}" in worker_err, worker_err[-2000:]
