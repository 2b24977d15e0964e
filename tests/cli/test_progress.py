"""Indexing progress: the engine's callback, the scan activity's heartbeat details, and the bar
(piped: a line with files/s) that ``explore`` shows while a large repository is indexed."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from temporalio.testing import ActivityEnvironment

from durable_navigator.activities.artifacts import LocalArtifactStore
from durable_navigator.activities.navigator import NavigatorActivities
from durable_navigator.activities.pricing_loader import TablePricer
from durable_navigator.navcore.navigator.activity_io import IndexProgress, ScanInput
from durable_navigator.navtypes.flightplan import FlightPlan
from durable_navigator.repomap import RepoMap
from tests.support.e2e import NAVIGATOR, Sandbox


def _tree(root: Path, files: int, extra_functions: int = 0) -> Path:
    """``files`` Python modules that call each other (enough for the engine's parallel path);
    ``extra_functions`` more per module make the index take seconds, not a blink."""
    for i in range(files):
        package = root / f"pkg{i % 25}"
        package.mkdir(parents=True, exist_ok=True)
        extra = "".join(
            f"\n\ndef step_{i}_{k}(items: list[int], factor: int = {k}) -> list[int]:\n"
            f"    \"\"\"Scale the items of module {i} by {k} and keep the even ones.\"\"\"\n"
            f"    scaled = [item * factor + {k} for item in items]\n    return [x for x in scaled if x % 2 == 0]\n"
            for k in range(extra_functions)
        )
        (package / f"mod{i}.py").write_text(
            f'"""Module {i}."""\n\nfrom pkg{(i + 1) % 25}.mod{(i + 1) % files} import helper_{(i + 1) % files}\n\n\n'
            f"def helper_{i}(value: int) -> int:\n    \"\"\"Helper {i}.\"\"\"\n    return value + {i}\n\n\n"
            f"class Service{i}:\n    def run(self) -> int:\n        return helper_{(i + 1) % files}({i})\n" + extra
        )
    return root


def test_the_engine_reports_indexing_progress(tmp_path: Path) -> None:
    repo = _tree(tmp_path / "repo", 120)
    calls: list[tuple[int, int]] = []
    RepoMap.open(repo, cache_dir=tmp_path / "cache", jobs=2, progress=lambda done, total: calls.append((done, total)))
    assert calls[0] == (0, 120) and calls[-1] == (120, 120)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls) and len(calls) > 2  # chunk by chunk


async def test_the_scan_heartbeats_its_progress(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NAVIGATOR_CACHE_DIR", str(tmp_path / "cache"))
    repo = _tree(tmp_path / "repo", 400)
    activities = NavigatorActivities(LocalArtifactStore(tmp_path / "artifacts"), pricer=TablePricer.load())
    beats: list[object] = []
    env = ActivityEnvironment()
    env.on_heartbeat = lambda *details: beats.extend(details)
    out = await env.run(activities.scan, ScanInput(repo_root=str(repo), flight_plan=FlightPlan(token_budget=2000),
                                                   model="offline", goal="helpers"))
    assert out.files_total == 400
    progress = [b for b in beats if isinstance(b, IndexProgress)]
    assert progress, beats
    assert all(p.total == 400 and 0 <= p.done <= 400 for p in progress)


def test_explore_shows_indexing_progress_on_a_large_repository(tmp_path: Path) -> None:
    repo = _tree(tmp_path / "big", 2500, extra_functions=60)  # seconds of indexing, on any machine
    (tmp_path / "box").mkdir()
    box = Sandbox.create(tmp_path / "box")
    proc = subprocess.run(
        [str(NAVIGATOR), "explore", str(repo), "where is helper_7 used?", "--max-iterations", "1", "--planning",
         "off", "--out", str(tmp_path / "out")],
        cwd=box.root, env=box.env(), capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = re.findall(r"^indexing ([\d,]+)/2,500 files(?: · ([\d,]+) files/s)?$", proc.stderr, re.M)
    assert lines, proc.stderr[-3000:]
    assert any(rate for _, rate in lines), lines  # files per second once a rate is known
