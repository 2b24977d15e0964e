"""A plan rendered again on the same index version: answered from the engine's memo, never stale."""

from __future__ import annotations

from pathlib import Path

import pytest

from durable_navigator.navtypes.flightplan import FlightPlan, VerbosityRule
from durable_navigator.repomap import RepoMap
from durable_navigator.repomap import discover as discover_mod


@pytest.fixture(autouse=True)
def _no_racy_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """Files written by the test are not "racy" (a checkout's files are minutes or years old)."""
    monkeypatch.setattr(discover_mod, "RACY_WINDOW_NS", 0)


def _repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "ledger.py").write_text(
        "def reserve(amount):\n    return amount\n\n\ndef settle(amount):\n    return -amount\n")
    (root / "pkg" / "other.py").write_text("def helper():\n    return 1\n")
    return root


def _plan() -> FlightPlan:
    return FlightPlan(goal="reserve the amount", token_budget=2048,
                      rules=[VerbosityRule(glob="pkg/ledger.py", level=4)])


def test_the_same_plan_is_answered_from_the_memo_with_its_own_time_and_a_copy(tmp_path: Path) -> None:
    engine = RepoMap.open(_repo(tmp_path), cache_dir=tmp_path / "cache", jobs=1)
    first = engine.render(_plan())
    assert "memo" not in first.metadata.timings_ms
    first.files[0].tokens = 10**6  # a caller changing its result must not change the next answer
    first.metadata.top_files.clear()
    again = engine.render(_plan())
    assert again.metadata.timings_ms["memo"] == 1.0
    assert again.text == first.text and again.files[0].tokens != 10**6 and again.metadata.top_files
    fresh = RepoMap.open(engine.root, cache_dir=tmp_path / "cache", jobs=1).render(_plan())
    assert (again.text, again.files) == (fresh.text, fresh.files)
    assert again.metadata.model_dump(exclude={"timings_ms"}) == fresh.metadata.model_dump(exclude={"timings_ms"})


def test_a_shown_file_edited_on_disk_is_rendered_again_as_it_is_now(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    engine = RepoMap.open(root, cache_dir=tmp_path / "cache", jobs=1)
    assert "return -amount" in engine.render(_plan()).text
    (root / "pkg" / "ledger.py").write_text(
        "def reserve(amount):\n    return amount\n\n\ndef settle(amount):\n    return amount * 2\n")
    again = engine.render(_plan())
    assert "memo" not in again.metadata.timings_ms
    assert "return amount * 2" in again.text and "return -amount" not in again.text


def test_a_file_gone_since_the_render_is_not_answered_from_the_memo(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    engine = RepoMap.open(root, cache_dir=tmp_path / "cache", jobs=1)
    engine.render(_plan())
    (root / "pkg" / "ledger.py").unlink()
    again = engine.render(_plan())
    assert "memo" not in again.metadata.timings_ms
    assert "pkg/ledger.py" in engine.vanished()


def test_a_file_changed_within_the_racy_window_is_never_answered_from_the_memo(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(discover_mod, "RACY_WINDOW_NS", 10**12)  # every file just written: its stat proves nothing
    engine = RepoMap.open(_repo(tmp_path), cache_dir=tmp_path / "cache", jobs=1)
    engine.render(_plan())
    assert "memo" not in engine.render(_plan()).metadata.timings_ms


def test_one_ranking_per_goal_and_focus_shared_by_ranks_and_renders_of_any_budget_or_levels(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The personalized ranking depends on the goal and the focus only: a turn's several renders
    (other budgets, other levels) and ranks reuse it, read-only; another focus ranks again."""
    from durable_navigator.navtypes.flightplan import FocusPath
    from durable_navigator.repomap import engine_query

    engine = RepoMap.open(_repo(tmp_path), cache_dir=tmp_path / "cache", jobs=1)
    ranked: list[str] = []
    real = engine_query.personalized_rank

    def counting(rs, pers, cfg):  # type: ignore[no-untyped-def]
        ranked.append("x")
        return real(rs, pers, cfg)

    monkeypatch.setattr(engine_query, "personalized_rank", counting)
    first = engine.rank(_plan())
    engine.render(_plan())
    engine.render(_plan().model_copy(update={"token_budget": 4096, "rules": []}))
    again = engine.rank(FlightPlan(goal="reserve the amount"))
    assert len(ranked) == 1
    assert again == first and again is not first  # the same files, in a list of its own
    again.clear()
    assert engine.rank(_plan()) == first
    ctx = engine._request(_plan())
    with pytest.raises(ValueError, match="read-only"):
        ctx.score[0] = 99.0
    focused = FlightPlan(goal="reserve the amount", focus_paths=[FocusPath(glob="pkg/other.py", weight=3.0)])
    assert engine.rank(focused)[0].path == "pkg/other.py" and len(ranked) == 2
    fresh = RepoMap.open(engine.root, cache_dir=tmp_path / "cache2", jobs=1)
    assert fresh.rank(_plan()) == first and len(ranked) == 3  # a new engine ranks on its own
