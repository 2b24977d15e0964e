"""Planning, stage and compression activities with the scripted and Gemini text models.

Activities run in ``temporalio.testing.ActivityEnvironment`` (the SDK's real
activity harness); Gemini runs the real google-genai client over the scripted
HTTP layer of ``activities.models.testing`` — no network.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from durable_navigator.activities.models.gemini import GeminiCredentials
from durable_navigator.activities.models.testing import ScriptedGemini, error_reply, text_reply, usage_metadata
from durable_navigator.activities.models.text import GeminiTextModel, ScriptedTextModel, build_text_model
from durable_navigator.activities.planning import PlanningActivities
from durable_navigator.navcore.flightplan import FlightPlan
from durable_navigator.navcore.mapmeta import FileSummary, MapMetadata
from durable_navigator.navcore.planning import (
    AnalyzeInput,
    CriteriaInput,
    PlanInput,
    PlanningConfig,
    ReflectInput,
    ReviewInput,
    apply_reflection,
    direct_plan,
)

GOAL = "why are tokens double-counted in budget enforcement, and where is the plugin hooked in?"
META = MapMetadata(
    tokens_used=900,
    token_budget=4096,
    files_total=3,
    top_files=[FileSummary(path="src/budget/ledger.py", level=2, requested_level=2, tokens=300, score=0.9)],
)


def _acts(tmp_path: Path, script: dict[str, list[object]]) -> tuple[PlanningActivities, ScriptedTextModel]:
    path = tmp_path / "script.yaml"
    path.write_text(yaml.safe_dump({"text": script}))
    model = build_text_model(f"scripted:{path}")
    assert isinstance(model, ScriptedTextModel)
    return PlanningActivities(text_model_for=lambda name: model), model


def _base(model: str = "scripted") -> dict[str, object]:
    return {"goal": GOAL, "model": model, "repo_root": "/nonexistent-repo-not-read"}


async def test_direct_goal(tmp_path: Path) -> None:
    acts, model = _acts(tmp_path, {"planning.analyze": ["DIRECT: one place in the code"]})
    res = await ActivityEnvironment().run(acts.analyze, AnalyzeInput(**_base(), map_metadata=META))
    assert res.analysis.direct and res.calls == 1 and res.usage.input_tokens > 0
    plan = direct_plan(GOAL)
    assert plan.direct and len(plan.stages) == 1
    assert "src/budget/ledger.py" in model.requests[0][2]  # map overview is in the prompt


async def test_plan_without_review(tmp_path: Path) -> None:
    acts, model = _acts(
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
    env = ActivityEnvironment()
    analysis = (await env.run(acts.analyze, AnalyzeInput(**_base()))).analysis
    assert not analysis.direct and not analysis.reflect
    res = await env.run(acts.plan, PlanInput(**_base(), analysis=analysis, map_metadata=META))
    assert [s.objective for s in res.plan.stages] == [
        "Find where the ledger books tokens",
        "Find the plugin hook",
        "trace its token counting",
    ]
    assert res.plan.split_stages == 1 and res.plan.stages[0].max_iterations == 3
    assert [k for k, _, _ in model.requests] == ["planning.analyze", "planning.plan"]


async def test_plan_with_review(tmp_path: Path) -> None:
    acts, model = _acts(
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
    env = ActivityEnvironment()
    cfg = PlanningConfig(review=True)
    analysis = (await env.run(acts.analyze, AnalyzeInput(**_base(), config=cfg))).analysis
    assert analysis.reflect
    review = (await env.run(acts.review, ReviewInput(**_base(), config=cfg, analysis=analysis))).review
    assert review.adjustments == ["add a stage on count_tokens"]
    res = await env.run(acts.plan, PlanInput(**_base(), config=cfg, analysis=analysis, review=review))
    assert res.plan.stages[0].objective == "Inspect count_tokens"
    plan_prompt_user = model.requests[-1][2]
    assert "PRAGMATIST: start with the plugin" in plan_prompt_user and "add a stage on count_tokens" in plan_prompt_user


async def test_failed_criteria_trigger_a_rewrite(tmp_path: Path) -> None:
    acts, _ = _acts(
        tmp_path,
        {
            "planning.plan": [
                "STAGE 1: Ledger\n- `src/budget/ledger.py` is shown\n- `reserve` is visible\n"
                "STAGE 2: Docs\n- README is shown"
            ],
            "stages.check_criteria": ["C1: MET | ledger.py at L2\nC2: NOT MET | reserve() not in the map"],
            "stages.reflect": [
                "REWRITE: reserve is still missing\nSTAGE 1: Find reserve\n- `reserve` is visible\nMAX_ITERATIONS: 2"
            ],
        },
    )
    env = ActivityEnvironment()
    from durable_navigator.navcore.planning import PlanningAnalysis

    plan = (await env.run(acts.plan, PlanInput(**_base(), analysis=PlanningAnalysis(direct=False)))).plan
    check = (
        await env.run(
            acts.check_criteria,
            CriteriaInput(**_base(), stage_index=0, stage=plan.stages[0], flight_plan=FlightPlan(), map_metadata=META),
        )
    ).check
    assert not check.all_met and check.unmet == ["`reserve` is visible"]
    reflection = (
        await env.run(acts.reflect, ReflectInput(**_base(), plan=plan, completed_index=0, check=check))
    ).reflection
    assert reflection.action == "rewrite"
    new_plan = apply_reflection(plan, 0, reflection, PlanningConfig())
    assert [s.objective for s in new_plan.stages] == ["Ledger", "Find reserve"]
    assert new_plan.stages[1].max_iterations == 2


async def test_corrective_reask_then_nonretryable_failure(tmp_path: Path) -> None:
    acts, model = _acts(tmp_path, {"planning.analyze": [["no verdict here", "Now with it.\nREFLECT: no"]]})
    env = ActivityEnvironment()
    res = await env.run(acts.analyze, AnalyzeInput(**_base()))
    assert res.calls == 2 and not res.analysis.reflect
    assert "COULD NOT BE USED" in model.requests[1][2] and "REFLECT: yes" in model.requests[1][2]
    again = await env.run(acts.analyze, AnalyzeInput(**_base()))  # a retry/replay gets the same answers
    assert again == res

    bad, _ = _acts(tmp_path, {"planning.analyze": [["bad", "still bad"]]})
    with pytest.raises(ApplicationError) as info:
        await env.run(bad.analyze, AnalyzeInput(**_base()))
    assert info.value.non_retryable and info.value.type == "PlanParseError"
    assert info.value.details[0]["input_tokens"] > 0  # spent usage travels with the failure
    empty, _ = _acts(tmp_path, {"planning.plan": ["STAGE 1: x\n- y"]})
    with pytest.raises(ApplicationError) as missing:
        await env.run(empty.analyze, AnalyzeInput(**_base()))
    assert missing.value.non_retryable and "no scripted response #0 for 'planning.analyze'" in str(missing.value)


async def test_stage_calls_are_keyed_by_stage_index(tmp_path: Path) -> None:
    from durable_navigator.navcore.planning import Stage

    acts, _ = _acts(tmp_path, {"stages.check_criteria": ["C1: NOT MET | stage 0", "C1: MET | stage 1"]})
    stage = Stage(objective="o", success_criteria=["c"])
    env = ActivityEnvironment()
    for index in (1, 0, 1):  # any order, any number of retries: the answer follows the stage
        check = (
            await env.run(
                acts.check_criteria,
                CriteriaInput(**_base(), stage_index=index, stage=stage, flight_plan=FlightPlan()),
            )
        ).check
        assert check.results[0].evidence == f"stage {index}" and check.stage_index == index


async def test_gemini_text_model_over_scripted_http(tmp_path: Path) -> None:
    gemini = ScriptedGemini(
        [
            text_reply("DIRECT", usage=usage_metadata(prompt=120, candidates=3, cached=100)),
            error_reply(429, "quota"),
            error_reply(400, "bad request"),
        ]
    )
    model = GeminiTextModel("gemini-2.5-flash", credentials=GeminiCredentials(api_key="k-secret"), transport=gemini.transport)
    acts = PlanningActivities(text_model_for=lambda name: model)
    env = ActivityEnvironment()
    res = await env.run(acts.analyze, AnalyzeInput(**_base("gemini-2.5-flash")))
    assert res.analysis.direct
    assert (res.usage.input_tokens, res.usage.output_tokens, res.usage.cached_tokens) == (120, 3, 100)
    body = gemini.requests[0].body
    assert "DIRECT" in body["systemInstruction"]["parts"][0]["text"] and GOAL in body["contents"][0]["parts"][0]["text"]
    with pytest.raises(ApplicationError) as transient:
        await env.run(acts.analyze, AnalyzeInput(**_base("gemini-2.5-flash")))
    assert not transient.value.non_retryable
    with pytest.raises(ApplicationError) as fatal:
        await env.run(acts.analyze, AnalyzeInput(**_base("gemini-2.5-flash")))
    assert fatal.value.non_retryable and "k-secret" not in str(fatal.value)


async def test_decisions_only_script_gives_a_clear_planning_error(tmp_path: Path) -> None:
    path = tmp_path / "decisions.yaml"
    path.write_text(yaml.safe_dump({"decisions": [{"action": "finalize_context", "summary": "done"}]}))
    acts = PlanningActivities(text_model_for=build_text_model)
    with pytest.raises(ApplicationError) as info:
        await ActivityEnvironment().run(acts.analyze, AnalyzeInput(**_base(f"scripted:{path}")))
    assert info.value.non_retryable and "add it to" in str(info.value)
