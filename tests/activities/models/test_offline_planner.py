"""The offline text model end to end: DIRECT, area stages from the ranking, criteria from the map."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.support.models import goal_ref, real_model_activities, run_spec

from durable_navigator.navtypes.flightplan import FlightPlan, Level, VerbosityRule
from durable_navigator.navcore.model_calls import AnalyzeSpec, CriteriaSpec, PlanSpec, ReflectSpec, ReviewSpec
from durable_navigator.navcore.planning import PlanningConfig, apply_reflection
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

    # Everything at level 2: the first stage's file criteria are met, with evidence.
    shown = FlightPlan(token_budget=20_000, rules=[VerbosityRule(glob="**", level=Level.OUTLINE)])
    ok = (await _answer(acts, CriteriaSpec(**base, config=cfg, stage_index=0, stage=first, flight_plan=shown))).check
    assert ok.all_met, ok
    assert all(" at L2" in r.evidence or " at L3" in r.evidence or " at L4" in r.evidence for r in ok.results)

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
