"""Planning, stage checks and reflection as model calls (``model.prepare`` + ``model.request``).

The scripted model answers by task kind and index; the offline tests are in
``test_offline_planner.py``; the Gemini text path runs over the scripted HTTP layer.
"""

from __future__ import annotations

from tests.support import FIXTURE_REPO as FIXTURE_REPO_DIR

from pathlib import Path

import yaml
from tests.support.models import goal_ref, real_model_activities, run_spec
from temporalio.exceptions import ApplicationError

from durable_navigator.activities.models.gemini import GeminiCredentials, GeminiModel
from durable_navigator.activities.models.gemini.testing import ScriptedGemini, error_reply, text_reply, usage_metadata
from durable_navigator.activities.models.scripted import ScriptedModel
from durable_navigator.navtypes.flightplan import FlightPlan, Level, VerbosityRule
from durable_navigator.navtypes.mapmeta import FileSummary, MapMetadata
from durable_navigator.navcore.navigator.model_calls import (
    AnalysisOut,
    AnalyzeSpec,
    CheckOut,
    CriteriaSpec,
    PlanOut,
    PlanSpec,
    ReflectionOut,
    ReflectSpec,
    ReviewOut,
    ReviewSpec,
)
from durable_navigator.navcore.planning.planning import (
    PlanningAnalysis,
    PlanningConfig,
    Stage,
    apply_reflection,
    direct_plan,
)

GOAL = "why are tokens double-counted in budget enforcement, and where is the plugin hooked in?"
REPO = str(FIXTURE_REPO_DIR)
META = MapMetadata(
    tokens_used=900,
    token_budget=4096,
    files_total=3,
    top_files=[FileSummary(path="src/budget/ledger.py", level=2, requested_level=2, tokens=300, score=0.9)],
)


def _setup(tmp_path: Path, script: dict[str, list[object]]) -> tuple[object, ScriptedModel, str, dict]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "script.yaml"
    path.write_text(yaml.safe_dump({"text": script}))
    name = f"scripted:{path}"
    acts = real_model_activities(tmp_path)
    model = acts.registry.model(name)
    assert isinstance(model, ScriptedModel)
    base = dict(model=name, repo_root=REPO, goal_ref=goal_ref(acts, GOAL), max_output_tokens=500)
    return acts, model, name, base


async def test_direct_goal(tmp_path: Path) -> None:
    acts, model, name, base = _setup(tmp_path, {"planning.analyze": ["DIRECT: one place in the code"]})
    out = await run_spec(acts, name, AnalyzeSpec(**base, config=PlanningConfig(), map_metadata=META))
    assert not isinstance(out, ApplicationError) and isinstance(out.result, AnalysisOut)
    assert out.result.analysis.direct and out.spent.calls == 1 and out.spent.usage.input_tokens > 0
    plan = direct_plan(GOAL)
    assert plan.direct and len(plan.stages) == 1
    assert "src/budget/ledger.py" in model.requests[0].messages[-1].content  # map overview is in the prompt


async def test_plan_without_review(tmp_path: Path) -> None:
    acts, model, name, base = _setup(
        tmp_path,
        {
            "planning.analyze": ["The ledger and the plugin are involved.\nREFLECT: no"],
            "planning.plan": [
                "STAGE 1: Find where the ledger books tokens\n- `src/budget/ledger.py` is shown at level 2 or more\n"
                "MAX_ITERATIONS: 3\nSTAGE 2: Find the plugin hook; then trace its token counting\n"
                "- `src/plugin.py` is shown\n- the token counting call is visible\n"
            ],
        },
    )
    cfg = PlanningConfig()
    out = await run_spec(acts, name, AnalyzeSpec(**base, config=cfg))
    assert not isinstance(out, ApplicationError) and isinstance(out.result, AnalysisOut)
    analysis = out.result.analysis
    assert not analysis.direct and not analysis.reflect
    res = await run_spec(acts, name, PlanSpec(**base, config=cfg, analysis=analysis, map_metadata=META))
    assert not isinstance(res, ApplicationError) and isinstance(res.result, PlanOut)
    assert [s.objective for s in res.result.plan.stages] == [
        "Find where the ledger books tokens",
        "Find the plugin hook",
        "trace its token counting",
    ]
    assert res.result.plan.split_stages == 1 and res.result.plan.stages[0].max_iterations == 3
    assert [r.task.kind for r in model.requests] == ["planning.analyze", "planning.plan"]


async def test_plan_with_review(tmp_path: Path) -> None:
    acts, model, name, base = _setup(
        tmp_path,
        {
            "planning.analyze": ["Several areas.\nREFLECT: yes"],
            "planning.review": [
                "CRITIC: assumes the double count is in the ledger\nPRAGMATIST: start with the plugin\n"
                "DETAILER: inspect count_tokens\nADJUSTMENTS:\n- add a stage on count_tokens"
            ],
            "planning.plan": ["STAGE 1: Inspect count_tokens\n- `count_tokens` is visible in the map"],
        },
    )
    cfg = PlanningConfig(review=True)
    analysis = (await run_spec(acts, name, AnalyzeSpec(**base, config=cfg))).result.analysis  # type: ignore[union-attr]
    assert analysis.reflect
    reviewed = await run_spec(acts, name, ReviewSpec(**base, config=cfg, analysis=analysis))
    assert not isinstance(reviewed, ApplicationError) and isinstance(reviewed.result, ReviewOut)
    review = reviewed.result.review
    assert review.adjustments == ["add a stage on count_tokens"]
    res = await run_spec(acts, name, PlanSpec(**base, config=cfg, analysis=analysis, review=review))
    assert not isinstance(res, ApplicationError) and isinstance(res.result, PlanOut)
    assert res.result.plan.stages[0].objective == "Inspect count_tokens"
    plan_prompt_user = model.requests[-1].messages[-1].content
    assert "PRAGMATIST: start with the plugin" in plan_prompt_user and "add a stage on count_tokens" in plan_prompt_user


async def test_failed_criteria_trigger_a_rewrite(tmp_path: Path) -> None:
    acts, _, name, base = _setup(
        tmp_path,
        {
            "planning.plan": [
                "STAGE 1: Ledger\n- `src/budgetkit/ledger.py` is shown\n- `reserve` is visible\n"
                "STAGE 2: Docs\n- README is shown"
            ],
            "stages.check_criteria": ["C1: MET | ledger.py at L2\nC2: NOT MET | reserve() not in the map"],
            "stages.reflect": [
                "REWRITE: reserve is still missing\nSTAGE 1: Find reserve\n- `reserve` is visible\nMAX_ITERATIONS: 2"
            ],
        },
    )
    cfg = PlanningConfig()
    plan = (await run_spec(acts, name, PlanSpec(**base, config=cfg, analysis=PlanningAnalysis(direct=False)))
            ).result.plan  # type: ignore[union-attr]
    checked = await run_spec(acts, name, CriteriaSpec(**base, config=cfg, stage_index=0, stage=plan.stages[0],
                                                      flight_plan=FlightPlan(), map_metadata=META))
    assert not isinstance(checked, ApplicationError) and isinstance(checked.result, CheckOut)
    check = checked.result.check
    assert not check.all_met and check.unmet == ["`reserve` is visible"]
    # both are about the map, so both were checked against it (the model's words kept as a note)
    assert check.results[0].evidence and check.results[0].evidence[0].startswith("src/budgetkit/ledger.py at L")
    assert "reserve is not shown" in check.results[1].note and "the model said not met" in check.results[1].note
    reflected = await run_spec(acts, name, ReflectSpec(**base, config=cfg, plan=plan, completed_index=0, check=check))
    assert not isinstance(reflected, ApplicationError) and isinstance(reflected.result, ReflectionOut)
    assert reflected.result.reflection.action == "rewrite"
    new_plan = apply_reflection(plan, 0, reflected.result.reflection, cfg)
    assert [s.objective for s in new_plan.stages] == ["Ledger", "Find reserve"]
    assert new_plan.stages[1].max_iterations == 2


async def test_corrective_reask_then_nonretryable_failure(tmp_path: Path) -> None:
    acts, model, name, base = _setup(tmp_path, {"planning.analyze": [["no verdict here", "Now with it.\nREFLECT: no"]]})
    spec = AnalyzeSpec(**base, config=PlanningConfig())
    out = await run_spec(acts, name, spec)
    assert not isinstance(out, ApplicationError) and out.spent.calls == 2
    assert "COULD NOT BE USED" in model.requests[1].messages[-1].content
    again = await run_spec(acts, name, spec)  # a retry/replay gets the same answers
    assert not isinstance(again, ApplicationError) and again.result == out.result

    bad, _, bad_name, bad_base = _setup(tmp_path / "b", {"planning.analyze": [["bad", "still bad"]]})
    err = await run_spec(bad, bad_name, AnalyzeSpec(**bad_base, config=PlanningConfig()))
    assert isinstance(err, ApplicationError) and err.non_retryable and err.type == "PlanParseError"
    assert err.details[0]["usage"]["input_tokens"] > 0  # spent usage travels with the failure
    empty, _, empty_name, empty_base = _setup(tmp_path / "c", {"planning.plan": ["STAGE 1: x\n- y"]})
    missing = await run_spec(empty, empty_name, AnalyzeSpec(**empty_base, config=PlanningConfig()))
    assert isinstance(missing, ApplicationError) and missing.non_retryable
    assert "no scripted answer #0 for 'planning.analyze'" in str(missing)


async def test_stage_calls_are_keyed_by_stage_index(tmp_path: Path) -> None:
    acts, _, name, base = _setup(tmp_path, {"stages.check_criteria": ["C1: NOT MET | stage 0", "C1: MET | stage 1"]})
    stage = Stage(objective="o", success_criteria=["c"])
    for index in (1, 0, 1):  # any order, any number of retries: the answer follows the stage
        out = await run_spec(acts, name, CriteriaSpec(**base, config=PlanningConfig(), stage_index=index, stage=stage,
                                                      flight_plan=FlightPlan()))
        assert not isinstance(out, ApplicationError) and isinstance(out.result, CheckOut)
        assert out.result.check.results[0].note == f"stage {index}" and out.result.check.stage_index == index


async def test_gemini_text_calls_over_scripted_http(tmp_path: Path) -> None:
    gemini = ScriptedGemini(
        [
            text_reply("DIRECT", usage=usage_metadata(prompt=120, candidates=3, cached=100)),
            error_reply(429, "quota"),
            error_reply(400, "bad request"),
        ]
    )
    model = GeminiModel(credentials=GeminiCredentials(api_key="k-secret"), transport=gemini.transport)
    acts = real_model_activities(tmp_path, overrides={"gemini-2.5-flash": model})
    base = dict(model="gemini-2.5-flash", repo_root=REPO, goal_ref=goal_ref(acts, GOAL), max_output_tokens=500)
    spec = AnalyzeSpec(**base, config=PlanningConfig())
    out = await run_spec(acts, "gemini-2.5-flash", spec)
    assert not isinstance(out, ApplicationError) and isinstance(out.result, AnalysisOut) and out.result.analysis.direct
    assert (out.spent.usage.input_tokens, out.spent.usage.output_tokens, out.spent.usage.cached_tokens) == (120, 3, 100)
    body = gemini.requests[0].body
    assert "DIRECT" in body["systemInstruction"]["parts"][0]["text"] and GOAL in body["contents"][0]["parts"][0]["text"]
    transient = await run_spec(acts, "gemini-2.5-flash", spec)
    assert isinstance(transient, ApplicationError) and not transient.non_retryable
    fatal = await run_spec(acts, "gemini-2.5-flash", spec)
    assert isinstance(fatal, ApplicationError) and fatal.non_retryable and "k-secret" not in str(fatal)


async def test_decisions_only_script_gives_a_clear_planning_error(tmp_path: Path) -> None:
    path = tmp_path / "decisions.yaml"
    path.write_text(yaml.safe_dump({"decisions": [{"action": "finalize_context", "summary": "done"}]}))
    acts = real_model_activities(tmp_path)
    name = f"scripted:{path}"
    err = await run_spec(acts, name, AnalyzeSpec(model=name, repo_root=REPO, goal_ref=goal_ref(acts, GOAL),
                                                 max_output_tokens=500, config=PlanningConfig()))
    assert isinstance(err, ApplicationError) and err.non_retryable and "add it to" in str(err)


async def test_a_criterion_about_the_map_is_judged_by_the_map_not_by_the_model(tmp_path: Path) -> None:
    """#29: a path at a level is a fact of the final map: a model's MET for a file shown at L1 and its NOT MET
    for a file shown at L4 are both overruled, each with what the map shows as evidence."""
    criteria = ["`src/budgetkit/ledger.py` is shown at level 2 or more", "`src/budgetkit/cli.py` is shown at level 2 or more"]
    acts, _, name, base = _setup(tmp_path, {"stages.check_criteria": ["C1: NOT MET | not there\nC2: MET | cli.py"]})
    stage = Stage(objective="the ledger", success_criteria=criteria)
    plan = FlightPlan(token_budget=4000, rules=[VerbosityRule(glob="src/budgetkit/ledger.py", level=Level.FULL),
                                                VerbosityRule(glob="src/budgetkit/cli.py", level=Level.PATH)])
    out = await run_spec(acts, name, CriteriaSpec(**base, config=PlanningConfig(), stage_index=0, stage=stage,
                                                  flight_plan=plan, map_metadata=META))
    assert not isinstance(out, ApplicationError) and isinstance(out.result, CheckOut)
    ledger, cli = out.result.check.results
    assert ledger.status == "met" and ledger.evidence == ["src/budgetkit/ledger.py at L4"]
    assert "the model said not met" in ledger.note
    assert cli.status == "not_met" and cli.evidence == [] and "src/budgetkit/cli.py at L1" in cli.note
