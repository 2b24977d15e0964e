"""Fuzzing the planning parsers: arbitrary model text gives a model or a PlanParseError, nothing else."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from durable_navigator.navcore.planning.planning import PlanningConfig, PlanParseError
from durable_navigator.navcore.planning.parse import (
    parse_analysis,
    parse_criteria_check,
    parse_reflection,
    parse_review,
    parse_stage_plan,
)

CFG = PlanningConfig(max_stages=4)
# Text biased towards the formats' keywords so the parsers' deeper branches run.
FRAGMENTS = st.sampled_from(
    ["STAGE 1:", "Stage 12:", "- ", "* ", "1. ", "MAX_ITERATIONS: 0", "max 99999 iterations", "REFLECT: yes",
     "DIRECT", "KEEP", "REWRITE", "C1: MET |", "C2: NOT MET", "CRITIC:", "PRAGMATIST:", "DETAILER:",
     "ADJUSTMENTS:", "; then ", " and then ", "```json\n", "```", '{"stages": [', "]}", "\n", "**", "`x.py`",
     "Success criteria:", "Objective:", "NO MORE STAGES", "x" * 2500,
     '{"stages": [{"objective": "o", "success_criteria": ["c"], "max_iterations": "x"}]}',
     '[{"objective": "o", "criteria": {"k": 1}, "max_iterations": 1e400}]', '[{"objective": ""}]', "[1, 2]"]
)
TEXT = st.lists(st.one_of(FRAGMENTS, st.text(max_size=40)), max_size=40).map("".join)
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(TEXT)
def test_parsers_only_raise_plan_parse_error(text: str) -> None:
    for parse in (
        parse_analysis,
        parse_review,
        lambda t: parse_stage_plan(t, CFG),
        lambda t: parse_criteria_check(t, ["a", "b"], 0),
        lambda t: parse_reflection(t, CFG),
    ):
        try:
            result = parse(text)
        except PlanParseError as exc:
            assert "\n" not in str(exc) and str(exc)
            continue
        assert result is not None


@SETTINGS
@given(TEXT)
def test_stage_plans_respect_caps(text: str) -> None:
    try:
        plan = parse_stage_plan(text, CFG)
    except PlanParseError:
        return
    assert 1 <= len(plan.stages) <= CFG.max_stages
    for stage in plan.stages:
        assert 1 <= stage.max_iterations <= CFG.max_stage_iterations
        assert 1 <= len(stage.success_criteria) <= CFG.max_criteria_per_stage
