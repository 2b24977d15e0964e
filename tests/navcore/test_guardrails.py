"""Guardrails: loop detection, anti-stall, goal anchoring, safety layers, profile YAML."""

from __future__ import annotations

from pathlib import Path

import pytest

from durable_navigator.activities.profiles import load_run_profile
from durable_navigator.navtypes.errors import ConfigError
from durable_navigator.navtypes.flightplan import FlightPlan, FlightPlanUpdate, Level, VerbosityRule
from durable_navigator.navcore.navigator.guardrails import (
    GuardrailState,
    RunProfile,
    RunProgress,
    check_guardrails,
    map_quality,
    observe,
    record_iteration,
)
from durable_navigator.navtypes.mapmeta import FileSummary, MapMetadata

GOAL = "why are tokens double-counted in budget enforcement?"


def _meta(levels: list[int], used: int = 1000) -> MapMetadata:
    files = [FileSummary(path=f"f{i}.py", level=lv, requested_level=lv, tokens=10, score=1.0 / (i + 1))
             for i, lv in enumerate(levels)]
    return MapMetadata(tokens_used=used, token_budget=4000, files_total=len(files), top_files=files)


def _progress(i: int, **kw: object) -> RunProgress:
    return RunProgress(goal=GOAL, iteration=i, **kw)


def test_scripted_loop_warns_then_forces_loop_detected() -> None:
    """The model keeps toggling the same rule: same plan 3x -> warning, 4x -> forced stop."""
    profile = RunProfile()
    state = GuardrailState()
    plan_a = FlightPlan(rules=[VerbosityRule(glob="src/**", level=Level.FULL)])
    plan_b = FlightPlan(rules=[VerbosityRule(glob="src/**", level=Level.OUTLINE)])
    script = [("zoom in src", plan_a), ("zoom out src", plan_b)] * 4
    verdicts = []
    for step, (reason, plan) in enumerate(script, start=1):
        verdicts.append(check_guardrails(profile, state, _progress(step)))
        upd = FlightPlanUpdate(set_rules=list(plan.rules))
        state = record_iteration(profile, state, observe(step, "update_flight_plan", reason, upd, plan, _meta([2]), profile))
    final = check_guardrails(profile, state, _progress(len(script) + 1))
    verdicts.append(final)
    reasons = [v.stop_reason for v in verdicts]
    first_warn = next(i for i, v in enumerate(verdicts) if any("LOOP WARNING" in w for w in v.warnings))
    first_stop = reasons.index("loop_detected")
    assert first_warn < first_stop, "a warning must come before the forced finalize"
    assert verdicts[first_warn].loop_repeats == 3 and verdicts[first_stop].loop_repeats == 4
    assert any("LOOP WARNING" in n for n in verdicts[first_warn].prompt_notes)


def test_near_identical_decisions_count_as_a_loop_even_with_new_plans() -> None:
    profile = RunProfile()
    state = GuardrailState()
    for step in range(1, 5):
        plan = FlightPlan(token_budget=4000 + step)  # a different plan each time
        state = record_iteration(
            profile, state, observe(step, "update_flight_plan", "zoom in on the budget ledger module", None, plan, None, profile)
        )
    assert check_guardrails(profile, state, _progress(5)).stop_reason == "loop_detected"


def test_anti_stall_and_goal_anchor_at_configured_intervals() -> None:
    profile = RunProfile(goal_anchor_every=4, stall={"warn_after": 3})
    state = GuardrailState()
    anchors, stalls = [], []
    for step in range(1, 14):
        verdict = check_guardrails(profile, state, _progress(step, stage_objective="inspect the ledger"))
        if any(n.startswith("GOAL ANCHOR") and GOAL in n for n in verdict.prompt_notes):
            anchors.append(step)
        if any("STALL WARNING" in n for n in verdict.prompt_notes):
            stalls.append(step)
        # distinct decisions, but the map never gets better after step 1
        plan = FlightPlan(token_budget=1000 + step)
        obs = observe(step, "update_flight_plan", f"try area number {step} {'x' * step}", None, plan, _meta([2, 1]), profile)
        state = record_iteration(profile, state, obs)
    assert anchors == [5, 9, 13]
    assert stalls == [5, 8, 11]  # 3, 6, 9 iterations without a better map


def test_better_map_resets_stall_and_is_deterministic() -> None:
    profile = RunProfile()
    low, high = _meta([1, 1, 1]), _meta([4, 3, 2])
    assert map_quality(high) > map_quality(low)
    assert map_quality(high) == map_quality(_meta([4, 3, 2]))
    state = GuardrailState()
    state = record_iteration(profile, state, observe(1, "u", "a", None, FlightPlan(), low, profile))
    state = record_iteration(profile, state, observe(2, "u", "b", None, FlightPlan(token_budget=9), low, profile))
    assert state.since_improvement == 1
    state = record_iteration(profile, state, observe(3, "u", "c", None, FlightPlan(token_budget=8), high, profile))
    assert state.since_improvement == 0 and state.best_step == 3


def test_safety_layers() -> None:
    profile = RunProfile(safety={"max_iterations": 5, "max_stage_iterations": 2, "max_activities": 20})
    state = GuardrailState()
    assert check_guardrails(profile, state, _progress(6)).stop_reason == "max_iterations"
    assert check_guardrails(profile, state, _progress(2, activities_used=20)).stop_reason == "activity_cap"
    assert check_guardrails(profile, state, _progress(3, stage_iteration=3)).end_stage is True
    assert check_guardrails(profile, state, _progress(3, stage_iteration=2)).end_stage is False
    # a stage's own smaller cap applies; a bigger one is clamped to the profile's
    assert check_guardrails(profile, state, _progress(2, stage_iteration=2, stage_max_iterations=1)).end_stage
    last = check_guardrails(profile, state, _progress(5))
    assert "Iteration 5 of at most 5" in last.prompt_notes[0] and "finalize_context now" in last.prompt_notes[0]


def test_profile_yaml(tmp_path: Path) -> None:
    path = tmp_path / "profile.yaml"
    path.write_text(
        "name: long\ngoal_anchor_every: 3\nloop: {warn_repeats: 3, stop_repeats: 5}\n"
        "safety: {max_iterations: 200}\ncompression: {threshold: 30, keep_last: 10}\nplanning: {review: true}\n"
    )
    profile = load_run_profile(path)
    assert profile.loop.stop_repeats == 5 and profile.safety.max_iterations == 200 and profile.planning.review
    with pytest.raises(ConfigError, match=r"loop\.warn_repeats"):
        load_run_profile("loop: {warn_repeats: one}\n")
    with pytest.raises(ConfigError, match="bogus"):
        load_run_profile("bogus: 1\n")
    with pytest.raises(ConfigError, match="line 2: not valid YAML"):
        load_run_profile("a: 1\nb: c: d\n")
    with pytest.raises(ConfigError, match="warn_repeats"):
        load_run_profile("loop: {warn_repeats: 4, stop_repeats: 4}\n")
