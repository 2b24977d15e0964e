"""README's demo goal on this repository, through the offline policy at 8k tokens.

"how does the navigator enforce the USD budget?" must show the ledger
(``navcore/run/budget.py``: reserve / reconcile) in full and the code that reserves
before each model call and reconciles after it (``ModelCaller._call``). The
issue that asked for this found the ledger at L1 and ``artifacts.py`` in full.
In process (engine + policy, no Temporal): the policy is what decides.
"""

from __future__ import annotations

from pathlib import Path

from durable_navigator.activities.models.offline import OfflineTurn, offline_decision as _offline_decision
from durable_navigator.activities.models.offline.config import OfflinePolicyConfig as _PolicyConfig
from durable_navigator.activities.models.offline.learned import LearnedConfig
from durable_navigator.navtypes.flightplan import FlightPlan, Level
from durable_navigator.repomap import RepoMap


# This module tests the hand-tuned rules (``learned.enabled=False``); the learned allocation,
# the default, has its own tests (``test_offline_learned.py``).
def OfflinePolicyConfig(**kw):  # noqa: N802 (stands in for the config class)
    return _PolicyConfig(**{"learned": LearnedConfig(enabled=False), **kw})


def offline_decision(turn, cfg=None):
    return _offline_decision(turn, cfg or OfflinePolicyConfig())

ROOT = Path(__file__).resolve().parents[3]
GOAL = "how does the navigator enforce the USD budget?"


def test_readme_demo_goal_shows_the_ledger_and_the_guard(tmp_path: Path) -> None:
    engine = RepoMap.open(ROOT, cache_dir=tmp_path / "cache")
    plan = FlightPlan(token_budget=8192)
    rendered = engine.render(plan)
    recent: list[tuple[str, str]] = []
    for it in range(1, 13):
        d = offline_decision(OfflineTurn(goal=GOAL, flight_plan=plan, iteration=it, max_iterations=12, engine=engine,
                                         map_metadata=rendered.metadata, recent_decisions=tuple(recent[-3:])))
        recent.append((d.action, d.reasoning))
        if d.action == "finalize_context":
            break
        plan = plan.apply(d.updates)
        rendered = engine.render(plan)
    levels = {f.path: f.level for f in rendered.metadata.top_files}
    assert levels.get("navcore/run/budget.py") == Level.FULL, levels
    text = rendered.text
    assert "def reserve(" in text and "def reconcile(" in text  # the ledger in full
    # the guard: the model call reserves before each attempt and reconciles after it
    assert "reservation = ledger.reserve(model, prepared.estimate_micros, step)" in text
    assert "ledger.reconcile(reservation" in text
    assert rendered.metadata.tokens_used <= 8192


def test_readme_demo_goal_with_the_default_learned_allocation(tmp_path: Path) -> None:
    """The default policy (the learned allocation) on README's demo goal: the ledger in full, inside
    the budget, in two turns. (It does not show ``ModelCaller._call``: that chunk shares no term with
    the goal and is not among the ranker's candidates; ``bench/RANKER.md``.)"""
    engine = RepoMap.open(ROOT, cache_dir=tmp_path / "cache")
    plan = FlightPlan(token_budget=8192)
    first = _offline_decision(OfflineTurn(goal=GOAL, flight_plan=plan, iteration=1, max_iterations=12, engine=engine,
                                          map_metadata=engine.render(plan).metadata))
    assert first.action == "update_flight_plan" and "learned ranker" in first.reasoning
    plan = plan.apply(first.updates)
    rendered = engine.render(plan)
    levels = {f.path: f.level for f in rendered.metadata.top_files}
    assert levels.get("navcore/run/budget.py") == Level.FULL, levels
    assert "def reserve(" in rendered.text and "def reconcile(" in rendered.text
    assert rendered.metadata.tokens_used <= 8192
    second = _offline_decision(OfflineTurn(goal=GOAL, flight_plan=plan, iteration=2, max_iterations=12,
                                           engine=engine, map_metadata=rendered.metadata))
    assert second.action == "finalize_context"
