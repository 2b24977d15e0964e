"""A test-only workflow driving issue 4's activities by name, with guardrails in the sandbox.

It stands in for the navigator's stage loop until the pieces are integrated:
analyze -> plan -> per stage (guardrail verdicts, a code tool) -> criteria
check -> reflection -> compression, all through a real worker and server.
"""

from __future__ import annotations

from datetime import timedelta

from pydantic import BaseModel
from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from durable_navigator.navcore.compression import CompressInput, CompressResult, CompressionConfig, LogEntry, build_summary_request
    from durable_navigator.navcore.flightplan import FlightPlan, Level, VerbosityRule
    from durable_navigator.navcore.guardrails import GuardrailState, RunProfile, RunProgress, check_guardrails, observe, record_iteration
    from durable_navigator.navcore.planning import (
        AnalyzeInput, AnalyzeResult, CriteriaInput, CriteriaResult, PlanInput, PlanResult,
        ReflectInput, ReflectResult, apply_reflection, direct_plan, plan_markdown,
    )
    from durable_navigator.navcore.tools import TOOL_ACTIVITY, ToolCall, ToolRequest, ToolResult


class ProbeInput(BaseModel):
    """What to explore."""

    repo_root: str
    goal: str
    model: str = "offline"


class ProbeResult(BaseModel):
    """What the probe saw."""

    direct: bool
    stages: int
    plan_markdown: str
    criteria_met: list[bool]
    reflection: str
    stop_reason: str | None
    tool_ok: bool
    tool_error: str | None
    summary: str


_OPTS = {"start_to_close_timeout": timedelta(seconds=60), "retry_policy": RetryPolicy(maximum_attempts=1)}


@workflow.defn(name="PlanningProbe")
class PlanningProbe:
    """Analyze, plan, loop with guardrails until a forced stop, check, reflect, compress."""

    @workflow.run
    async def run(self, inp: ProbeInput) -> ProbeResult:
        base = {"goal": inp.goal, "model": inp.model, "repo_root": inp.repo_root}
        analysis = await workflow.execute_activity(
            "planning.analyze", AnalyzeInput(**base), result_type=AnalyzeResult, summary="planning · analyze", **_OPTS
        )
        if analysis.analysis.direct:
            plan = direct_plan(inp.goal)
        else:
            plan = (await workflow.execute_activity(
                "planning.plan", PlanInput(**base, analysis=analysis.analysis), result_type=PlanResult,
                summary="planning · plan", **_OPTS,
            )).plan
        profile = RunProfile()
        gstate = GuardrailState()
        stop = None
        flight = FlightPlan(rules=[VerbosityRule(glob="src/**", level=Level.OUTLINE)])
        for step in range(1, 10):  # a scripted loop: the same plan every turn
            verdict = check_guardrails(profile, gstate, RunProgress(goal=inp.goal, iteration=step))
            if verdict.stop_reason:
                stop = verdict.stop_reason
                break
            gstate = record_iteration(profile, gstate, observe(step, "update_flight_plan", "same again", None, flight, None, profile))
        call = ToolCall(name="read_file", args={"path": "../../etc/passwd"})
        tool = await workflow.execute_activity(
            TOOL_ACTIVITY[call.name], ToolRequest(repo_root=inp.repo_root, call=call, step=1), result_type=ToolResult,
            summary=call.summary(1), **_OPTS,
        )
        check = (await workflow.execute_activity(
            "stages.check_criteria",
            CriteriaInput(**base, stage_index=0, stage=plan.stages[0], flight_plan=FlightPlan(exclude=["**"])),
            result_type=CriteriaResult, summary="stage 1 · criteria", **_OPTS,
        )).check
        reflection = (await workflow.execute_activity(
            "stages.reflect", ReflectInput(**base, plan=plan, completed_index=0, check=check),
            result_type=ReflectResult, summary="stage 1 · reflect", **_OPTS,
        )).reflection
        plan = apply_reflection(plan, 0, reflection, profile.planning)
        log = [LogEntry(step=i, action="update_flight_plan", reasoning=f"zoom {i}") for i in range(1, 35)]
        req = build_summary_request(log, CompressionConfig())
        summary = await workflow.execute_activity(
            "navigator.compress", CompressInput(model=inp.model, goal=inp.goal, request=req),
            result_type=CompressResult, summary="compress", **_OPTS,
        )
        return ProbeResult(
            direct=analysis.analysis.direct, stages=len(plan.stages), plan_markdown=plan_markdown(plan, {0: check}),
            criteria_met=[r.met for r in check.results], reflection=reflection.action, stop_reason=stop,
            tool_ok=tool.ok, tool_error=tool.error, summary=summary.summary,
        )
