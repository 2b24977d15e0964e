"""Pinned keys: a human's choices that later model turns cannot undo."""

from __future__ import annotations

from durable_navigator.navtypes.flightplan import FlightPlan, FlightPlanUpdate, FocusPath, Level, VerbosityRule


def _rule(glob: str, level: int) -> VerbosityRule:
    return VerbosityRule(glob=glob, level=Level(level))


def test_a_pinned_rule_is_kept_against_an_unpinned_update() -> None:
    human = FlightPlanUpdate(set_rules=[_rule("src/a.py", 4)], add_exclude=["docs/**"]).pinned()
    plan = FlightPlan().apply(human)
    assert set(plan.pinned) == {"src/a.py", "docs/**"}
    model = FlightPlanUpdate(set_rules=[_rule("src/a.py", 1), _rule("src/b.py", 2)], remove_exclude=["docs/**"],
                             remove_rules=["src/a.py"])
    assert model.blocked_by(plan) == ["src/a.py", "docs/**"]
    after = plan.apply(model)
    assert {r.glob: int(r.level) for r in after.rules} == {"src/a.py": 4, "src/b.py": 2}
    assert after.exclude == ["docs/**"]
    # another human edit (it pins the key itself) may change it
    again = after.apply(FlightPlanUpdate(set_rules=[_rule("src/a.py", 2)]).pinned())
    assert {r.glob: int(r.level) for r in again.rules}["src/a.py"] == 2


def test_pinned_focus_is_neither_replaced_nor_removed() -> None:
    plan = FlightPlan().apply(FlightPlanUpdate(add_focus_paths=[FocusPath(glob="src/**", weight=4)]).pinned())
    after = plan.apply(FlightPlanUpdate(add_focus_paths=[FocusPath(glob="src/**", weight=1)],
                                        remove_focus_paths=["src/**"]))
    assert after.focus_paths == plan.focus_paths


def test_an_update_without_pins_changes_nothing_pinned_and_keeps_the_pin_list() -> None:
    plan = FlightPlan().apply(FlightPlanUpdate(set_rules=[_rule("x.py", 3)]).pinned())
    assert plan.apply(FlightPlanUpdate()).pinned == ["x.py"]
    assert FlightPlanUpdate(set_rules=[_rule("y.py", 2)]).keys() == ["y.py"]
