"""Guardrails inside NavigatorWorkflow (real dev server, scripted model).

Loop detection forces a finalize with ``loop_detected``; the iteration budget
and the goal anchor reach the prompt at the configured intervals; the hard cap
on activities stops a run with ``activity_cap``. All of it is decided in the
workflow from its own state, so replays see the same verdicts.
"""

from __future__ import annotations

import uuid

from tests.support.navigator import ZOOM_BUDGET, ZOOM_OUT_CLI, ScriptProvider, update
from tests.support.navigator import make_activities, make_request, run

from durable_navigator.navcore.navigator.guardrails import LoopConfig, RunProfile, SafetyConfig, StallConfig
from durable_navigator.navcore.navigator.state import StopReason
from durable_navigator.workflows.navigator import NavigatorWorkflow

#: a plan that changes every step (no loop): one new rule per step
DISTINCT = [update(set_rules=[{"glob": f"src/budgetkit/part{i}.py", "level": 2}]) for i in range(12)]


async def test_scripted_loop_finalizes_with_loop_detected(client, task_queue, start_worker, tmp_path) -> None:
    # the model keeps proposing the same two moves: the plan oscillates between two states
    provider = ScriptProvider(steps=[ZOOM_BUDGET, ZOOM_OUT_CLI] * 6)
    wf_id = f"nav-loop-{uuid.uuid4()}"
    async with start_worker(make_activities(tmp_path, provider)):
        result = await run(client, task_queue, make_request(tmp_path, max_iterations=12), wf_id)
        log = await client.get_workflow_handle(wf_id).query(NavigatorWorkflow.get_decision_log)
    assert result.stop_reason is StopReason.LOOP_DETECTED
    assert "near-identical" in (result.stop_detail or "")
    # a warning came first (3 repeats), then the forced finalize (4 repeats) before step 8 was
    # paid for: plans after steps 2, 4, 6 are identical and the ZOOM_BUDGET moves of steps 1, 3,
    # 5, 7 are identical decisions
    assert sum("LOOP WARNING" in p for p in provider.prompts) >= 1
    assert result.iterations == len(log.entries) == 7 < 12
    # the best map so far is still written
    assert result.context_path and "src/budgetkit" in open(result.context_path).read()


async def test_goal_anchor_and_iteration_budget_reach_the_prompt(client, task_queue, start_worker, tmp_path) -> None:
    profile = RunProfile(goal_anchor_every=3, stall=StallConfig(warn_after=2))
    provider = ScriptProvider(steps=DISTINCT[:7])
    req = make_request(tmp_path, max_iterations=10, profile=profile)
    async with start_worker(make_activities(tmp_path, provider)):
        result = await run(client, task_queue, req)
    assert result.stop_reason is StopReason.FINALIZED and result.iterations == 8
    prompts = provider.prompts
    assert all("## Guardrails" in p for p in prompts)
    assert "Iteration 1 of at most 10 (9 left after this one)." in prompts[0]
    # goal anchoring at iterations 4 and 7 (every 3), with the goal text filled in on the worker
    anchored = [i + 1 for i, p in enumerate(prompts) if "GOAL ANCHOR" in p]
    assert anchored == [4, 7]
    assert f"stay on the goal — {req.goal}" in prompts[3]
    # anti-stall: the rules name files that do not exist, so the map never gets better; the
    # warning comes every 2 iterations without a better map (2, 4, 6 → prompts 4, 6, 8)
    stalled = [i + 1 for i, p in enumerate(prompts) if "STALL WARNING" in p]
    assert stalled == [4, 6, 8]
    assert "<<goal>>" not in "".join(prompts)


async def test_activity_cap_stops_the_run(client, task_queue, start_worker, tmp_path) -> None:
    # scan (1) + 3 per iteration: a cap of 10 allows three iterations, then stops
    profile = RunProfile(safety=SafetyConfig(max_iterations=40, max_activities=10),
                         loop=LoopConfig(warn_repeats=49, stop_repeats=50, window=50))
    provider = ScriptProvider(steps=DISTINCT)
    async with start_worker(make_activities(tmp_path, provider)):
        result = await run(client, task_queue, make_request(tmp_path, max_iterations=20, profile=profile))
    assert result.stop_reason is StopReason.ACTIVITY_CAP
    assert result.iterations == 3
    assert result.context_path is not None


async def test_design_query_names_alias_the_issue_names(client, task_queue, start_worker, tmp_path) -> None:
    provider = ScriptProvider(steps=[ZOOM_BUDGET])
    wf_id = f"nav-alias-{uuid.uuid4()}"
    async with start_worker(make_activities(tmp_path, provider)):
        await run(client, task_queue, make_request(tmp_path), wf_id)
        handle = client.get_workflow_handle(wf_id)
        for alias, name in (("status", "get_status"), ("decision_log", "get_decision_log"),
                            ("flight_plan", "get_flight_plan")):
            assert await handle.query(alias) == await handle.query(name)
