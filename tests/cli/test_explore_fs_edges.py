"""`navigator explore` end to end on a repository with a file symlink loop and a non-UTF-8 name (#29).

Both once failed the run ("scan failed: RuntimeError: Symlink loop", ``UnicodeEncodeError … surrogates
not allowed``); now the run finalizes, the loop is listed as skipped and the Latin-1 name is indexed under
its escaped form, and ``context.md``, ``report.json`` and the result (what ``status --json`` / ``result
--json`` print) name the same skipped files.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

from tests.support.cli import FIXTURE_REPO
from tests.support.e2e import NAVIGATOR, Sandbox

GOAL = "why are tokens double-counted in budget enforcement?"


def _edge_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURE_REPO, repo)
    os.symlink("loop1", repo / "loop2")
    os.symlink("loop2", repo / "loop1")
    with open(os.path.join(os.fsencode(repo), b"caf\xe9_latin1.py"), "wb") as fh:
        fh.write(b"def cafe_budget(tokens):\n    return tokens\n")
    return repo


def test_explore_finalizes_and_lists_the_same_skips_everywhere(tmp_path: Path) -> None:
    box = Sandbox.create(tmp_path)
    repo = _edge_repo(tmp_path)
    proc = subprocess.run(
        [str(NAVIGATOR), "explore", str(repo), GOAL, "--max-iterations", "3", "--json", "--out", str(tmp_path / "out")],
        cwd=tmp_path, env=box.env(), capture_output=True, text=True, timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    result = json.loads(proc.stdout)
    assert result["stop_reason"] in {"finalized", "max_iterations"}
    context = Path(result["context_path"]).read_text(encoding="utf-8")
    report = json.loads(Path(result["report_path"]).read_text(encoding="utf-8"))
    meta = result["map_metadata"]
    assert meta["not_indexed"] == {"loop1": "symlink_loop", "loop2": "symlink_loop"}
    assert meta["not_indexed_counts"] == {"symlink_loop": 2}
    assert report["map_metadata"]["not_indexed"] == meta["not_indexed"]
    assert report["files_not_in_map"]["not_indexed"] == meta["not_indexed"]
    section = context.split("## Files not in the map\n\n", 1)[1].split("\n## ", 1)[0]
    assert sorted(re.findall(r"`([^`]+)`", section)) == ["loop1", "loop2"]
    assert "- symlink_loop: 2" in section
    # the Latin-1 name is indexed (counted in the map's files) and never skipped
    assert meta["files_total"] == report["map_metadata"]["files_total"]
    assert "caf\\xe9_latin1.py" not in section
    # the repro named `status --json` too: it reads the closed run's result from history (on a server
    # started for it: the explore's embedded one stopped with the command)
    env = box.env(idle_timeout_s=120)
    server = subprocess.Popen([str(NAVIGATOR), "server", "--headless"], cwd=tmp_path, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(120):  # `status` exits 3 until the server answers
            status = subprocess.run([str(NAVIGATOR), "status", result["workflow_id"], "--json"], cwd=tmp_path,
                                    env=env, capture_output=True, text=True, timeout=120)
            if status.returncode != 3:
                break
            time.sleep(0.5)
        assert status.returncode == 0, status.stderr[-2000:]
        assert json.loads(status.stdout)["result"]["map_metadata"]["not_indexed"] == meta["not_indexed"]
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=60)
    listing = subprocess.run([str(NAVIGATOR), "map", str(repo), "--tokens", "8000", "--goal", "cafe_budget"],
                             cwd=tmp_path, env=box.env(), capture_output=True, text=True, timeout=120)
    assert listing.returncode == 0 and "caf\\xe9_latin1.py [L" in listing.stdout, listing.stderr[-2000:]
