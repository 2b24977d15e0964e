"""``bench/history_scale.py``: a bad flag is refused in one line before any repository is built."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.support import TESTS

sys.path.insert(0, str(TESTS.parent / "bench"))

import history_scale  # noqa: E402


def test_drop_caches_without_root_is_refused_before_any_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Emptying the page cache needs root: without it the run stops at once, says what to do, and
    neither builds the 20,000-file repository nor writes a result."""
    monkeypatch.setattr(history_scale.os, "access", lambda *_a, **_k: False)
    work, results = tmp_path / "work", tmp_path / "results"
    with pytest.raises(SystemExit) as stop:
        history_scale.main(["--drop-caches", "--files", "10", "--commits", "2", "--work", str(work),
                            "--results", str(results)])
    assert str(stop.value) == ("--drop-caches needs root (it writes /proc/sys/vm/drop_caches); "
                               "run as root or leave it out")
    assert not work.exists() and not results.exists()


def test_runs_below_one_is_refused_before_any_work(tmp_path: Path) -> None:
    work = tmp_path / "work"
    with pytest.raises(SystemExit) as stop:
        history_scale.main(["--runs", "0", "--files", "10", "--commits", "2", "--work", str(work)])
    assert str(stop.value) == "--runs 0: give at least 1"
    assert not work.exists()


def test_several_runs_report_the_median_first_exploration_and_list_every_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One first exploration varies by seconds on this machine: ``--runs`` reports the run whose first
    exploration is the median, each run in fresh state folders, and lists them all. (The explorations
    are scripted here; the benchmark itself runs the installed CLI.)"""
    seconds = iter([64.2, 21.3, 50.8, 17.6, 57.8, 18.7])
    states: list[Path] = []

    def scripted(repo: Path, state: Path, goal: str) -> dict[str, object]:
        assert (repo / ".git").is_dir()
        states.append(state)
        return {"seconds": next(seconds), "exit": 0}

    monkeypatch.setattr(history_scale, "explore", scripted)
    monkeypatch.setattr(history_scale, "compile_bytecode", lambda: {})
    work, results = tmp_path / "work", tmp_path / "results"
    assert history_scale.main(["--runs", "3", "--files", "10", "--commits", "2", "--work", str(work),
                               "--results", str(results)]) == 0
    assert len(set(states)) == 3 and states[0] == states[1] and not any(s.exists() for s in states)
    md = next(results.glob("*.md")).read_text()
    assert "| first exploration (cold: scan + index every file) | 57.8 | 0 | <= 60 |" in md
    assert "| second exploration (warm: incremental refresh) | 18.7 | 0 | — |" in md
    assert "Every run, first / second (s): 64.2 / 21.3, 50.8 / 17.6, 57.8 / 18.7." in md
