"""`navigator explore` end to end: embedded server + in-process worker + offline model."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from tests.support.cli import FIXTURE_REPO
from tests.support.e2e import NAVIGATOR, Sandbox

from durable_navigator.workers.devserver import port_in_use

GOAL = "why are tokens double-counted in budget enforcement?"


def test_explore_on_the_embedded_server_writes_the_context_pack(tmp_path: Path) -> None:
    box = Sandbox.create(tmp_path)
    proc = subprocess.run(
        [str(NAVIGATOR), "explore", str(FIXTURE_REPO), GOAL, "--max-iterations", "6", "--out", str(tmp_path / "out")],
        cwd=tmp_path, env=box.env(), capture_output=True, text=True, timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"embedded Temporal started: gRPC 127.0.0.1:{box.port}" in proc.stderr
    link = re.search(r"Web UI: (\S+)", proc.stderr)
    assert link and link.group(1).startswith(box.ui_prefix), proc.stderr
    wid = link.group(1).rsplit("/", 1)[1]
    written = re.search(r"^context written to (.+context\.md)$", proc.stdout, re.M)
    assert written, proc.stdout
    context = Path(written.group(1))
    assert context == tmp_path / "out" / wid / "context.md"
    text = context.read_text()
    assert "budgetkit" in text and len(text) > 200
    report = json.loads((context.parent / "report.json").read_text())
    assert isinstance(report, dict) and report
    assert wid in json.dumps(report)
    # planning is on by default: the plan is printed and logged; the offline model's learned
    # allocation (the default) surveys on its first turn and finalizes on its second
    actions = [d["action"] for d in report["decisions"]]
    assert actions[:2] == ["planning_analysis", "stage_plan"] and "update_flight_plan" in actions, actions
    assert "finalize_context" in actions and "call_tools" not in actions, actions
    assert any("learned ranker" in (d.get("reasoning") or "") for d in report["decisions"]), report["decisions"]
    assert re.search(r"^Plan \((direct|\d+ stages)\)$", proc.stderr + proc.stdout, re.M), proc.stderr[-2000:]
    assert "## Stages and success criteria" in text
    # the embedded server was ours: it is gone, its database stays for `navigator server`
    assert not port_in_use("127.0.0.1", box.port)
    assert (tmp_path / "state" / "temporal.db").is_file()


def test_explore_json_output_and_run_visible_after_restart(tmp_path: Path) -> None:
    box = Sandbox.create(tmp_path)
    proc = subprocess.run(
        [str(NAVIGATOR), "explore", str(FIXTURE_REPO), GOAL, "--max-iterations", "3", "--json",
         "--id", "nav-e2e-json", "--out", str(tmp_path / "out")],
        cwd=tmp_path, env=box.env(), capture_output=True, text=True, timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert result["workflow_id"] == "nav-e2e-json"
    assert result["stop_reason"] in {"finalized", "max_iterations"}
    assert result["iterations"] <= 3 and Path(result["context_path"]).is_file()
    assert result["ui_url"].startswith(box.ui_prefix)
    # `navigator server` on the same database: the run is still there
    server = subprocess.Popen([str(NAVIGATOR), "server", "--json"], cwd=tmp_path, env=box.env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        info = json.loads("".join(iter(server.stdout.readline, "}\n")) + "}")
        assert info["grpc"] == f"127.0.0.1:{box.port}" and info["ui"] == f"http://127.0.0.1:{box.ui_port}"
        again = subprocess.run([str(NAVIGATOR), "result", "nav-e2e-json", "--json"], cwd=tmp_path,
                               env=box.env(), capture_output=True, text=True, timeout=60)
        assert again.returncode == 0, again.stderr
        assert json.loads(again.stdout)["context_path"] == result["context_path"]
    finally:
        server.send_signal(2)  # Ctrl-C: clean shutdown
        assert server.wait(timeout=30) == 0
    assert not port_in_use("127.0.0.1", box.port)
