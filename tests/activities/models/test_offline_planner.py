"""The offline text model end to end: DIRECT, area stages from the ranking, criteria from the map."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.support.models import goal_ref, real_model_activities, run_spec

from durable_navigator.navtypes.flightplan import FlightPlan, Level, VerbosityRule
from durable_navigator.navcore.navigator.model_calls import AnalyzeSpec, CriteriaSpec, PlanSpec, ReflectSpec, ReviewSpec
from durable_navigator.navcore.planning.planning import PlanningConfig, apply_reflection
from durable_navigator.repomap import RepoMap

SHORT = "where is the budget ledger?"
LONG = (
    "why are tokens double-counted in budget enforcement when the ledger records streamed usage, "
    "and how does the command line report the remaining budget to the user after each call?"
)


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("offline_repo")
    files = {
        "src/budget/ledger.py": "class Ledger:\n    def record(self, usage):\n        '''Record streamed usage tokens.'''\n        self.tokens += usage\n",
        "src/budget/enforce.py": "from src.budget.ledger import Ledger\n\ndef enforce_budget(ledger, tokens):\n    '''Budget enforcement: double check tokens.'''\n    ledger.record(tokens)\n",
        "src/cli/report.py": "def report_remaining_budget(ledger):\n    '''Command line report of the remaining budget.'''\n    return ledger.tokens\n",
        "src/cli/main.py": "from src.cli.report import report_remaining_budget\n\ndef main():\n    '''Command line entry point.'''\n    report_remaining_budget(None)\n",
        "src/util/strings.py": "def slug(text):\n    return text.lower()\n",
        "docs/guide.md": "# Guide\nUnrelated prose about installation.\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return RepoMap.open(root, cache_dir=tmp_path_factory.mktemp("cache"), jobs=1)


def _base(goal: str, engine: Any, tmp_path: Path) -> tuple[Any, dict[str, Any]]:
    acts = real_model_activities(tmp_path)
    return acts, dict(model="offline", repo_root=str(engine.root), goal_ref=goal_ref(acts, goal), max_output_tokens=2048)


async def _answer(acts: Any, spec: Any) -> Any:
    out = await run_spec(acts, "offline", spec)
    assert not isinstance(out, Exception), out
    return out.result


async def test_offline_short_goal_is_direct(engine: Any, tmp_path: Path) -> None:
    acts, base = _base(SHORT, engine, tmp_path)
    assert (await _answer(acts, AnalyzeSpec(**base, config=PlanningConfig()))).analysis.direct


async def test_offline_plan_review_criteria_and_reflection(engine: Any, tmp_path: Path) -> None:
    acts, base = _base(LONG, engine, tmp_path)
    cfg = PlanningConfig(review=True)
    analysis = (await _answer(acts, AnalyzeSpec(**base, config=cfg))).analysis
    assert not analysis.direct and analysis.reflect and "src/budget" in analysis.analysis
    review = (await _answer(acts, ReviewSpec(**base, config=cfg, analysis=analysis))).review
    assert review.critic and review.pragmatist and review.adjustments
    plan = (await _answer(acts, PlanSpec(**base, config=cfg, analysis=analysis, review=review))).plan
    areas = [s.objective for s in plan.stages]
    assert 2 <= len(plan.stages) <= cfg.max_stages
    assert any("src/budget/" in a for a in areas) and any("src/cli/" in a for a in areas)
    first = plan.stages[0]
    assert all("`" in c and "level 2" in c for c in first.success_criteria)

    # Everything in full: the criteria ("`f` is shown at level 2 or more") are checked against the map
    shown = FlightPlan(token_budget=20_000, rules=[VerbosityRule(glob="**", level=Level.FULL)])
    ok = (await _answer(acts, CriteriaSpec(**base, config=cfg, stage_index=0, stage=first, flight_plan=shown))).check
    assert ok.all_met, ok
    assert all(r.evidence and all(e.endswith(" at L4") for e in r.evidence) for r in ok.results), ok
    # paths only (L1): the files are in the map but not at level 2: not met, and the note says where they are
    paths = FlightPlan(token_budget=20_000, rules=[VerbosityRule(glob="**", level=Level.PATH)])
    low = (await _answer(acts, CriteriaSpec(**base, config=cfg, stage_index=0, stage=first, flight_plan=paths))).check
    assert [r.status for r in low.results] == ["not_met"] * len(first.success_criteria), low
    assert all(" at L1" in r.note and not r.evidence for r in low.results), low

    # The stage's area excluded: criteria fail, reflection rewrites the remaining stages.
    area = first.objective.split("the ", 1)[1].split("/ area")[0]
    hidden = FlightPlan(token_budget=20_000, exclude=[f"{area}/**"])
    bad = (await _answer(acts, CriteriaSpec(**base, config=cfg, stage_index=0, stage=first, flight_plan=hidden))).check
    assert not bad.all_met
    reflection = (await _answer(acts, ReflectSpec(**base, config=cfg, plan=plan, completed_index=0, check=bad))).reflection
    assert reflection.action == "rewrite"
    new_plan = apply_reflection(plan, 0, reflection, cfg)
    assert new_plan.stages[1].objective.startswith("Revisit stage 1")
    assert new_plan.stages[1].success_criteria == bad.unmet
    assert [s.objective for s in new_plan.stages[2:]] == [s.objective for s in plan.stages[1:]][: cfg.max_stages - 2]

    # The revisit fails too: no second revisit (the deterministic navigator would end where it did;
    # "Revisit stage 3: Revisit stage 2: ..." chains once ran until the loop guard stopped the run)
    again = (await _answer(acts, CriteriaSpec(**base, config=cfg, stage_index=1, stage=new_plan.stages[1],
                                              flight_plan=hidden))).check
    assert not again.all_met
    moved_on = (await _answer(acts, ReflectSpec(**base, config=cfg, plan=new_plan, completed_index=1,
                                                check=again))).reflection
    assert moved_on.action == "keep" and "still unmet after a revisit" in moved_on.reasoning
    assert apply_reflection(new_plan, 1, moved_on, cfg) == new_plan


async def test_a_criterion_the_offline_model_cannot_read_is_unchecked_whatever_the_map(
    engine: Any, tmp_path: Path
) -> None:
    """The direct stage's generic criterion ("the code that answers the goal") is no fact about the map the
    offline model can check: unchecked — never met on the goal's words shown, never failed on them hidden."""
    from durable_navigator.navcore.planning.planning import direct_plan

    goal = "where does the ledger record streamed usage tokens?"
    acts, base = _base(goal, engine, tmp_path)
    stage = direct_plan(goal).stages[0]
    ledger = FlightPlan(token_budget=20_000, goal=goal, rules=[VerbosityRule(glob="src/budget/**", level=Level.FULL)],
                        exclude=["src/cli/**", "src/util/**"])
    hidden = FlightPlan(token_budget=20_000, goal=goal, exclude=["src/budget/**"])
    for plan in (ledger, hidden):
        check = (await _answer(acts, CriteriaSpec(**base, config=PlanningConfig(), stage_index=0, stage=stage,
                                                  flight_plan=plan))).check
        (r,) = check.results
        assert r.status == "unchecked" and r.evidence == [] and "cannot tell" in r.note, r
        assert check.unmet == [] and not check.all_met
        # nothing failed: no revisit of a stage whose criterion nobody could check
        plan_ = direct_plan(goal)
        kept = (await _answer(acts, ReflectSpec(**base, config=PlanningConfig(), plan=plan_, completed_index=0,
                                                check=check))).reflection
        assert kept.action == "keep" and "1 unchecked" in kept.reasoning


async def test_planned_stages_never_sit_in_areas_the_survey_zooms_out(tmp_path: Path) -> None:
    """Docs match the goal's words best, but the goal does not ask for docs: no docs/ stage (the survey excludes it)."""
    root = tmp_path / "repo"
    files = {
        "docs/budget.md": "# Budget ledger\nThe budget ledger records token usage; the plugin reports budget usage.\n" * 5,
        "docs/plugin.md": "# Plugin\nThe budget plugin reports token usage to the ledger.\n" * 5,
        "src/budget/ledger.py": "class Ledger:\n    def record(self, usage):\n        self.tokens += usage\n",
        "src/plugin/hooks.py": "def after_call(ledger, usage):\n    ledger.record(usage)\n",
        "tests/test_ledger.py": "def test_ledger_budget_usage_tokens():\n    pass\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    goal = ("how does the budget ledger record token usage reported by the plugin, and how do the plugin hooks "
            "reach the ledger after each call?")
    repo_engine = RepoMap.open(root, cache_dir=tmp_path / "cache", jobs=1)
    acts, base = _base(goal, repo_engine, tmp_path)
    cfg = PlanningConfig()
    analysis = (await _answer(acts, AnalyzeSpec(**base, config=cfg))).analysis
    assert not analysis.direct
    plan = (await _answer(acts, PlanSpec(**base, config=cfg, analysis=analysis))).plan
    objectives = " ".join(s.objective for s in plan.stages)
    assert "src/" in objectives
    assert "docs/" not in objectives and "tests/" not in objectives, objectives
    # a goal that asks for the docs gets them
    docs_goal = goal + " Update the documentation too."
    acts2, base2 = _base(docs_goal, repo_engine, tmp_path / "second")
    analysis2 = (await _answer(acts2, AnalyzeSpec(**base2, config=cfg))).analysis
    plan2 = (await _answer(acts2, PlanSpec(**base2, config=cfg, analysis=analysis2))).plan
    assert any("docs" in s.objective for s in plan2.stages), [s.objective for s in plan2.stages]
