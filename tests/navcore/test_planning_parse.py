"""Parsers of the planning phase: canonical formats, drifted formats, clear errors."""

from __future__ import annotations

import json

import pytest

from durable_navigator.navcore.planning.planning import (
    CriteriaCheck,
    CriterionStatus,
    PlanningConfig,
    PlanParseError,
    Reflection,
    Stage,
    StagePlan,
    apply_reflection,
    direct_plan,
    plan_markdown,
)
from durable_navigator.navcore.planning.parse import (
    parse_analysis,
    parse_criteria_check,
    parse_reflection,
    parse_review,
    parse_stage_plan,
    split_compound,
)

CFG = PlanningConfig()


@pytest.mark.parametrize("text", ["DIRECT", "**DIRECT** — one function", "  direct: simple\n", "# DIRECT"])
def test_direct_variants(text: str) -> None:
    assert parse_analysis(text).direct is True


@pytest.mark.parametrize(
    ("text", "reflect"),
    [
        ("Look at the ledger and the plugin.\nREFLECT: yes", True),
        ("Two areas.\n\n**REFLECT:** no", False),
        ("Analysis...\nreflect = True", True),
    ],
)
def test_analysis_with_reflect(text: str, reflect: bool) -> None:
    a = parse_analysis(text)
    assert a.direct is False and a.reflect is reflect
    assert "REFLECT" not in a.analysis.upper()
    assert a.analysis


def test_analysis_without_reflect_is_a_clear_error() -> None:
    with pytest.raises(PlanParseError, match="REFLECT: yes"):
        parse_analysis("Some analysis that forgot the last line")
    with pytest.raises(PlanParseError, match="empty"):
        parse_analysis("  \n ")


def test_review_sections_and_missing_section() -> None:
    r = parse_review(
        "**CRITIC:** assumes one bug\nmore critic\n## PRAGMATIST\nstart at ledger\n"
        "DETAILER: check plugin.py\nPLAN ADJUSTMENTS:\n- add plugin stage\n* drop docs\n"
    )
    assert r.critic == "assumes one bug\nmore critic"
    assert r.pragmatist == "start at ledger"
    assert r.adjustments == ["add plugin stage", "drop docs"]
    with pytest.raises(PlanParseError, match="PRAGMATIST"):
        parse_review("CRITIC: x\nDETAILER: y")


def test_canonical_stage_plan() -> None:
    plan = parse_stage_plan(
        "Plan:\nSTAGE 1: Find the budget ledger\n- `src/budget/ledger.py` is shown at level 2 or more\n"
        "- reserve() visible\nMAX_ITERATIONS: 3\n\n**Stage 2:** Inspect the plugin\n"
        "Success criteria: plugin.py shown; count_tokens visible\n",
        CFG,
    )
    assert [s.objective for s in plan.stages] == ["Find the budget ledger", "Inspect the plugin"]
    assert plan.stages[0].success_criteria == ["`src/budget/ledger.py` is shown at level 2 or more", "reserve() visible"]
    assert plan.stages[0].max_iterations == 3
    assert plan.stages[1].success_criteria == ["plugin.py shown", "count_tokens visible"]
    assert plan.stages[1].max_iterations == CFG.default_stage_iterations


def test_numbered_list_and_json_plans() -> None:
    numbered = parse_stage_plan("1. Find ledger\n   - ledger.py shown\n2) Check plugin (max 2 iterations)\n   - plugin shown", CFG)
    assert [s.objective for s in numbered.stages] == ["Find ledger", "Check plugin"]
    assert numbered.stages[1].max_iterations == 2
    body = {"stages": [{"objective": "A", "success_criteria": ["a shown"], "max_iterations": 50}]}
    js = parse_stage_plan(f"```json\n{json.dumps(body)}\n```", CFG)
    assert js.stages[0].objective == "A"
    assert js.stages[0].max_iterations == CFG.max_stage_iterations  # clamped to the per-stage ceiling


def test_compound_steps_are_split() -> None:
    plan = parse_stage_plan(
        "STAGE 1: Find the budget ledger; then trace the reservation path\n"
        "- ledger.py is shown\n- the reservation function is visible\n",
        CFG,
    )
    assert [s.objective for s in plan.stages] == ["Find the budget ledger", "trace the reservation path"]
    assert plan.stages[0].success_criteria == ["ledger.py is shown"]
    assert plan.stages[1].success_criteria == ["the reservation function is visible"]
    assert plan.split_stages == 1
    parts = split_compound("Read the config and then check the loader", ["config read"])
    assert [p for p, _ in parts] == ["Read the config", "check the loader"]
    assert parts[1][1][0].startswith("The map shows")  # a part without criteria stays checkable


def test_hard_cap_on_stages() -> None:
    text = "\n".join(f"STAGE {i}: objective number {i}\n- criterion {i}" for i in range(1, 12))
    plan = parse_stage_plan(text, CFG)
    assert len(plan.stages) == 8 and plan.dropped_stages == 3
    small = parse_stage_plan(text, PlanningConfig(max_stages=3))
    assert len(small.stages) == 3 and small.dropped_stages == 8


def test_stage_without_criteria_is_a_clear_error() -> None:
    with pytest.raises(PlanParseError, match="stage 2 .* no success criteria"):
        parse_stage_plan("STAGE 1: a thing\n- crit\nSTAGE 2: other thing\n", CFG)
    with pytest.raises(PlanParseError, match="no stages found"):
        parse_stage_plan("I think we should look around.", CFG)


def test_criteria_check_variants_and_missing() -> None:
    text = "C1: MET | shown at L3\n- C2: **NOT MET** - missing\n3. yes: ok\nC4: UNCHECKED | the map cannot show it"
    check = parse_criteria_check(text, ["a", "b", "c", "d"], 1)
    assert [r.status for r in check.results] == ["met", "not_met", "met", "unchecked"]
    # the model's words are its note, never "evidence" (which lists only what a check found)
    assert check.results[0].note == "shown at L3" and check.results[0].evidence == []
    # an unchecked criterion is neither met nor a failure to revisit
    assert check.unmet == ["b"] and check.unchecked == ["d"] and not check.all_met
    with pytest.raises(PlanParseError, match="C2"):
        parse_criteria_check("C1: MET | x", ["a", "b"], 0)


def test_reflection_keep_rewrite_and_apply() -> None:
    assert parse_reflection("KEEP - still fine", CFG).action == "keep"
    r = parse_reflection("Decision: REWRITE: plugin unmet\nSTAGE 1: revisit plugin\n- plugin.py shown\nSTAGE 2: docs\n- README shown", CFG)
    assert r.action == "rewrite" and r.reasoning == "plugin unmet"
    assert [s.objective for s in r.remaining_stages] == ["revisit plugin", "docs"]
    stop = parse_reflection("REWRITE: done\nNO MORE STAGES", CFG)
    assert stop.remaining_stages == []
    with pytest.raises(PlanParseError, match="KEEP"):
        parse_reflection("maybe", CFG)

    plan = StagePlan(stages=[Stage(objective=f"s{i}", success_criteria=["c"]) for i in range(3)])
    new = apply_reflection(plan, 0, r, PlanningConfig(max_stages=2))
    assert [s.objective for s in new.stages] == ["s0", "revisit plugin"] and new.dropped_stages == 1
    assert apply_reflection(plan, 1, Reflection(action="keep"), CFG) is plan


def test_stage_outcomes_fit_the_decision_log() -> None:
    from datetime import datetime, timezone

    from durable_navigator.navcore.planning.planning import criteria_log_fields, reflection_log_fields
    from durable_navigator.navcore.navigator.state import DecisionLogEntry

    stage = Stage(objective="Find the ledger", success_criteria=["a", "b"])
    check = CriteriaCheck(stage_index=0, results=[CriterionStatus(criterion="a", status="met", evidence=["x.py at L2"]),
                                                  CriterionStatus(criterion="b", status="not_met"),
                                                  CriterionStatus(criterion="c", status="unchecked", note="why")])
    at = datetime(2026, 1, 1, tzinfo=timezone.utc)
    entry = DecisionLogEntry(step=7, at=at, **criteria_log_fields(check, stage))
    assert entry.reasoning == "stage 1 'Find the ledger': 1/3 criteria met, 1 unchecked"
    assert entry.diff_lines == ["met: a — x.py at L2", "NOT met: b", "unchecked: c (why)"]
    rw = Reflection(action="rewrite", reasoning="b unmet", remaining_stages=[stage])
    entry = DecisionLogEntry(step=7, at=at, **reflection_log_fields(rw, 0))
    assert entry.action == "reflection" and entry.diff_lines == ["+ stage: Find the ledger"]


def test_plan_markdown_shows_criteria_status() -> None:
    plan = direct_plan("why are tokens double counted?")
    check = CriteriaCheck(stage_index=0, results=[CriterionStatus(criterion=plan.stages[0].success_criteria[0],
                                                                  status="met", evidence=["ledger.py at L4"])])
    md = plan_markdown(plan, {0: check}, current=0)
    assert "(direct)" in md and "[x]" in md and "ledger.py at L4" in md and "← current" in md
    unchecked = CriteriaCheck(stage_index=0, results=[CriterionStatus(
        criterion=plan.stages[0].success_criteria[0], status="unchecked", note="the offline model cannot tell")])
    md = plan_markdown(plan, {0: unchecked}, current=None)
    assert "- [?] The map shows" in md and "- [x]" not in md and "— unchecked (the offline" in md and "[?] unchecked" in md
