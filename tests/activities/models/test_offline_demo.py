"""README's demo goal on this repository, through the offline policy at 8k tokens.

"how does the navigator enforce the USD budget?" must show the ledger
(``navcore/budget.py``: reserve / reconcile) in full and the code that reserves
before each model call and reconciles after it (``ModelCaller._call``). The
issue that asked for this found the ledger at L1 and ``artifacts.py`` in full.
In process (engine + policy, no Temporal): the policy is what decides.
"""

from __future__ import annotations

from pathlib import Path

from durable_navigator.activities.models.offline import OfflineTurn, offline_decision
from durable_navigator.navtypes.flightplan import FlightPlan, Level
from durable_navigator.repomap import RepoMap

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
    assert levels.get("navcore/budget.py") == Level.FULL, levels
    text = rendered.text
    assert "def reserve(" in text and "def reconcile(" in text  # the ledger in full
    # the guard: the model call reserves before each attempt and reconciles after it
    assert "reservation = ledger.reserve(model, prepared.estimate_micros, step)" in text
    assert "ledger.reconcile(reservation" in text
    assert rendered.metadata.tokens_used <= 8192
