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
