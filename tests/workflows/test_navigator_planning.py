"""Planning phase and stages inside NavigatorWorkflow (real dev server, scripted models).

The decisions come from the scripted provider, the planning/stage answers
from the scripted text model; the workflow runs analyze → [review] → plan,
then the stages with their caps, criteria checks and reflections.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from tests.support.navigator import ZOOM_BUDGET, ZOOM_OUT_CLI, ScriptProvider, update, wait_for
from tests.support.navigator import TIMEOUT, make_activities, make_request, run

from durable_navigator.navcore.navigator.messages import ApproveInput, RejectInput, StopInput
from durable_navigator.navcore.navigator.state import ExecutionMode, StopReason
from durable_navigator.workflows.navigator import NavigatorWorkflow

TWO_STAGES = (
    "STAGE 1: Find where the ledger books tokens\n- `src/budgetkit/ledger.py` is shown\n- `reserve` is visible\n"
    "MAX_ITERATIONS: 2\nSTAGE 2: Document the CLI\n- the CLI is shown\nMAX_ITERATIONS: 2"
)


async def _explore(client, task_queue, start_worker, tmp_path: Path, steps: list[Any],
                   texts: dict[str, list[Any]], **req: Any) -> tuple[Any, Any, ScriptProvider, ScriptProvider]:
    provider = ScriptProvider(steps=steps, texts=texts)
    model = provider
    wf_id = f"nav-plan-{uuid.uuid4()}"
    async with start_worker(make_activities(tmp_path, provider)):
        result = await run(client, task_queue, make_request(tmp_path, **req), wf_id)
        log = await client.get_workflow_handle(wf_id).query(NavigatorWorkflow.get_decision_log)
    return result, log, provider, model


async def test_direct_goal_runs_one_implicit_stage(client, task_queue, start_worker, tmp_path) -> None:
    texts = {"planning.analyze": ["DIRECT: one file answers it"], "stages.check_criteria": ["C1: MET | ledger at L4"]}
    result, log, provider, model = await _explore(
        client, task_queue, start_worker, tmp_path, [ZOOM_BUDGET], texts, planning="auto"
    )
    actions = [e.action for e in log.entries]
    assert actions[:2] == ["planning_analysis", "stage_plan"]
    assert [k for k, _, _ in model.requests] == ["planning.analyze", "stages.check_criteria"]
    assert result.stop_reason is StopReason.FINALIZED and "criteria_check" in actions
    assert "## Current stage" in provider.prompts[0] and "Stage 1 of 1: Answer the goal directly" in provider.prompts[0]
    context = Path(result.context_path).read_text()
    assert "## Stages and success criteria" in context and "[x]" in context
    # planning calls are in the ledger: input tokens of the analysis are logged
    assert log.entries[0].input_tokens > 0


async def test_plan_without_review_skips_the_review(client, task_queue, start_worker, tmp_path) -> None:
    texts = {
        "planning.analyze": ["Ledger and CLI.\nREFLECT: yes"],
        "planning.plan": [TWO_STAGES],
        "stages.check_criteria": ["C1: MET | ok\nC2: MET | ok", "C1: MET | ok"],
        "stages.reflect": ["KEEP: on track"],
    }
    result, log, provider, model = await _explore(
        client, task_queue, start_worker, tmp_path, [ZOOM_BUDGET, "finalize", ZOOM_OUT_CLI], texts, planning="auto"
    )
    kinds = [k for k, _, _ in model.requests]
    assert "planning.review" not in kinds and kinds[:2] == ["planning.analyze", "planning.plan"]
    # stage 1 was finalized by the model at step 2; stage 2 started with step 3
    assert "Stage 1 of 2" in provider.prompts[1] and "Stage 2 of 2: Document the CLI" in provider.prompts[2]
    assert result.stop_reason is StopReason.FINALIZED


async def test_review_and_failed_criteria_rewrite_the_remaining_stages(
    client, task_queue, start_worker, tmp_path
) -> None:
    texts = {
        "planning.analyze": ["Several areas.\nREFLECT: yes"],
        "planning.review": ["CRITIC: assumes the ledger\nPRAGMATIST: start with the plugin\n"
                            "DETAILER: inspect reserve\nADJUSTMENTS:\n- look at reserve"],
        "planning.plan": [TWO_STAGES],
        "stages.check_criteria": ["C1: MET | ledger.py shown\nC2: NOT MET | reserve() not in the map",
                                  "C1: MET | reserve at L4"],
        "stages.reflect": ["REWRITE: reserve is still missing\nSTAGE 1: Find reserve\n- `reserve` is visible\n"
                           "MAX_ITERATIONS: 2"],
    }
    steps = [ZOOM_BUDGET, ZOOM_OUT_CLI, update(set_rules=[{"glob": "src/budgetkit/ledger.py", "level": 4}])]
    result, log, provider, model = await _explore(
        client, task_queue, start_worker, tmp_path, steps, texts, planning="auto", review=True
    )
    actions = [e.action for e in log.entries]
    assert actions[:4] == ["planning_analysis", "planning_review", "stage_plan", "update_flight_plan"]
    # the stage cap (2) ended stage 1: its criteria failed and the reflection rewrote stage 2
    check = next(e for e in log.entries if e.action == "criteria_check")
    assert any(line.startswith("NOT met: `reserve` is visible") for line in check.diff_lines)
    reflection = next(e for e in log.entries if e.action == "reflection")
    assert reflection.diff_lines == ["+ stage: Find reserve"] and "rewrite" in reflection.reasoning
    assert "Stage 2 of 2: Find reserve" in provider.prompts[2]
    assert result.stop_reason is StopReason.FINALIZED and result.iterations == 4
    context = Path(result.context_path).read_text()
    assert "Find reserve" in context and "[!]" in context
    report = json.loads(Path(result.report_path).read_text())
    assert report["stop_reason"] == "finalized"


async def test_interactive_plan_approval_replans_once_with_the_feedback(
    client, task_queue, start_worker, tmp_path
) -> None:
    texts = {
        "planning.analyze": ["Ledger and CLI.\nREFLECT: no"],
        "planning.plan": [TWO_STAGES],
        "stages.check_criteria": ["C1: MET | ok\nC2: MET | ok"],
        "stages.reflect": ["KEEP: fine"],
    }
    provider = ScriptProvider(steps=[ZOOM_BUDGET, ZOOM_OUT_CLI], texts=texts)
    model = provider
    req = make_request(tmp_path, planning="auto", mode=ExecutionMode.INTERACTIVE)
    async with start_worker(make_activities(tmp_path, provider)):
        handle = await client.start_workflow(NavigatorWorkflow.run, req, id=f"nav-plan-{uuid.uuid4()}",
                                             task_queue=task_queue, execution_timeout=TIMEOUT)
        report = await wait_for(handle, lambda r: r.awaiting_kind == "plan" and r.awaiting_turn == 1)
        assert report.stage_plan and "Find where the ledger books tokens" in report.stage_plan
        # a verdict for map turn 1 is not a verdict for the plan
        await handle.signal(NavigatorWorkflow.approve, ApproveInput(turn=1, sender="t"))
        await handle.signal(NavigatorWorkflow.reject, RejectInput(turn=1, kind="plan", sender="t",
                                                                 feedback="start with the CLI"))
        await wait_for(handle, lambda r: r.awaiting_kind == "plan" and r.awaiting_turn == 2 and r.decisions == 3)
        assert not provider.prompts  # nothing decided while the plan waits
        await handle.signal(NavigatorWorkflow.approve, ApproveInput(turn=2, kind="plan", sender="t"))
        await handle.signal(NavigatorWorkflow.approve, ApproveInput(turn=2, kind="plan", sender="t"))  # a double click
        report = await wait_for(handle, lambda r: r.awaiting_kind == "turn" and r.awaiting_turn == 1
                                and r.decisions == 4)  # decision turn 1 still waits for its own verdict
        await handle.signal(NavigatorWorkflow.stop, StopInput(sender="t", reason="enough"))
        result = await handle.result()
        log = await handle.query(NavigatorWorkflow.get_decision_log)
    plans = [e for e in log.entries if e.action == "stage_plan"]
    assert [p.verdict for p in plans] == ["reject", "approve"] and plans[0].feedback == "start with the CLI"
    ignored = [n for n in log.notes if n.note.startswith("ignored")]
    assert [(n.kind, n.turn) for n in ignored] == [("approve", 1), ("approve", 2)], ignored
    assert result.stop_reason == "stopped"
    assert "re-planned after the user's feedback" in plans[1].reasoning
    replan_prompt = [user for kind, _, user in model.requests if kind == "planning.plan"][-1]
    assert "USER FEEDBACK ON THE PREVIOUS PLAN (revise it): start with the CLI" in replan_prompt
    assert result.stop_reason is StopReason.STOPPED


async def test_a_failed_planning_call_falls_back_to_one_direct_stage(
    client, task_queue, start_worker, tmp_path
) -> None:
    texts = {
        "planning.analyze": ["Several areas.\nREFLECT: no"],
        # the plan call answers garbage every time (the activity's re-ask included)
        "planning.plan": [["no stages here, sorry", "still nothing usable", "garbage"]],
        "stages.check_criteria": ["C1: MET | ledger at L4"],
    }
    provider = ScriptProvider(steps=[ZOOM_BUDGET], texts=texts)
    wf_id = f"nav-plan-fail-{uuid.uuid4()}"
    async with start_worker(make_activities(tmp_path, provider)):
        result = await run(client, task_queue, make_request(tmp_path, planning="auto"), wf_id)
        handle = client.get_workflow_handle(wf_id)
        log = await handle.query(NavigatorWorkflow.get_decision_log)
        status = await handle.query(NavigatorWorkflow.get_status)
    # the exploration went on: a decision was made and the run finalized
    assert result.stop_reason is StopReason.FINALIZED and result.iterations >= 1
    actions = [e.action for e in log.entries]
    assert actions[:3] == ["planning_analysis", "planning.plan", "stage_plan"], actions
    failed, fallback = log.entries[1], log.entries[2]
    assert failed.error  # the parse failure, as the activity reported it
    assert fallback.reasoning.startswith("planning fallback: planning.plan failed (")
    assert fallback.error and fallback.error.startswith("planning fallback:")
    assert "Stage 1 of 1: Answer the goal directly" in provider.prompts[0]
    # visible in status, report.json and the context pack
    assert status.planning_fallback and "planning.plan failed" in status.planning_fallback
    report = json.loads(Path(result.report_path).read_text())
    assert report["planning_fallback"] == status.planning_fallback
    assert "Fallback: planning.plan failed" in Path(result.context_path).read_text()


SCRIPT_FILE = """
decisions:
  - action: call_tools
    reasoning: find the ledger first
    tool_calls: [{name: search_codebase, args: {query: ledger reserve}}]
  - action: update_flight_plan
    reasoning: zoom into the ledger
    updates: {set_rules: [{glob: src/budgetkit/ledger.py, level: 4}]}
  - action: update_flight_plan
    reasoning: the CLI
    updates: {set_rules: [{glob: src/budgetkit/cli.py, level: 3}]}
  - action: finalize_context
    summary: the ledger and the CLI
text:
  planning.analyze: ["Two areas.\\nREFLECT: yes"]
  planning.review: ["CRITIC: fine\\nPRAGMATIST: ledger first\\nDETAILER: reserve"]
  planning.plan: ["STAGE 1: Find the ledger\\n- `ledger.py` is shown\\nMAX_ITERATIONS: 2\\nSTAGE 2: The CLI\\n- the CLI is shown\\nMAX_ITERATIONS: 2"]
  stages.check_criteria: ["C1: NOT MET | not yet", "C1: MET | cli shown"]
  stages.reflect: ["REWRITE: the CLI matters\\nSTAGE 1: Show the CLI\\n- the CLI is shown\\nMAX_ITERATIONS: 2"]
"""


async def test_a_scripted_model_file_drives_tools_planning_review_criteria_and_reflection(
    client, task_queue, start_worker, tmp_path
) -> None:
    """``--model scripted:<file>``: one file answers decisions (tool calls included) and every text call."""
    from durable_navigator.activities.artifacts import LocalArtifactStore
    from durable_navigator.activities.pricing_loader import TablePricer
    from durable_navigator.activities.navigator import NavigatorActivities

    script = tmp_path / "run.yaml"
    script.write_text(SCRIPT_FILE)
    acts = NavigatorActivities(LocalArtifactStore(tmp_path / "artifacts"), pricer=TablePricer.load())
    req = make_request(tmp_path, model=f"scripted:{script}", planning="auto", review=True, max_iterations=8)
    wf_id = f"nav-scripted-file-{uuid.uuid4()}"
    async with start_worker(acts):
        result = await run(client, task_queue, req, wf_id)
        log = await client.get_workflow_handle(wf_id).query(NavigatorWorkflow.get_decision_log)
    actions = [e.action for e in log.entries]
    assert actions[:3] == ["planning_analysis", "planning_review", "stage_plan"], actions
    assert actions[3:6] == ["call_tools", "update_flight_plan", "criteria_check"], actions
    assert "reflection" in actions and actions.count("criteria_check") == 2
    reflection = next(e for e in log.entries if e.action == "reflection")
    assert reflection.diff_lines == ["+ stage: Show the CLI"]
    assert not any(e.error for e in log.entries if e.action.startswith(("planning", "stage")))
    assert result.stop_reason is StopReason.FINALIZED


async def test_a_direct_stage_spans_the_whole_run(client, task_queue, start_worker, tmp_path) -> None:
    """The default planning must not cut a DIRECT run short at the profile's per-stage cap."""
    from durable_navigator.navcore.navigator.guardrails import RunProfile, SafetyConfig

    texts = {"planning.analyze": ["DIRECT: simple"], "stages.check_criteria": ["C1: MET | ok"]}
    steps = [update(set_rules=[{"glob": f"src/budgetkit/part{i}.py", "level": 2}]) for i in range(4)]
    profile = RunProfile(safety=SafetyConfig(max_stage_iterations=2))
    result, log, provider, model = await _explore(client, task_queue, start_worker, tmp_path, steps, texts,
                                                  planning="auto", profile=profile, max_iterations=8)
    assert result.stop_reason is StopReason.FINALIZED and result.iterations == 5  # 4 moves, then finalize
    assert "Iteration 3 of at most 8 in this stage." in provider.prompts[2]
    assert [k for k, _, _ in model.requests].count("stages.check_criteria") == 1


async def test_stages_that_end_on_the_same_plan_are_not_a_loop(client, task_queue, start_worker, tmp_path) -> None:
    """A stage with nothing to add finalizes on the plan the stage before ended on. Counted across
    stages, four such ends made the loop guard stop runs as ``loop_detected`` (12% of the offline
    navigator's benchmark runs); the loop window starts afresh with each stage."""
    five = "\n".join(f"STAGE {i}: Inspect area {i}\n- area {i} is shown\nMAX_ITERATIONS: 2" for i in range(1, 6))
    texts = {
        "planning.analyze": ["Five areas.\nREFLECT: yes"],
        "planning.plan": [five],
        "stages.check_criteria": ["C1: MET | shown"] * 5,
        "stages.reflect": ["KEEP: on track"] * 4,
    }
    result, log, provider, model = await _explore(
        client, task_queue, start_worker, tmp_path, [ZOOM_BUDGET] + ["finalize"] * 5, texts, planning="auto"
    )
    assert result.stop_reason is StopReason.FINALIZED, (result.stop_reason, result.stop_detail)
    assert [k for k, _, _ in model.requests].count("stages.check_criteria") == 5
    assert "Stage 5 of 5" in provider.prompts[-1]
