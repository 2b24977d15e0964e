"""Issue 4's activities on a real worker and dev server, driven by a probe workflow."""

from __future__ import annotations

import uuid
from datetime import timedelta
from pathlib import Path

from temporalio.client import Client

from durable_navigator.activities.planning import PlanningActivities
from durable_navigator.activities.tools import CodeToolActivities
from planning_probe_workflow import PlanningProbe, ProbeInput, ProbeResult
from durable_navigator.workers.worker import build_activities, build_worker

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "navigator_repo"
GOAL = (
    "why are tokens double-counted in budget enforcement when the plugin records streamed usage in the "
    "ledger, and how does the command line print the remaining budget?"
)


async def test_probe_runs_planning_stages_tools_and_guardrails(client: Client, task_queue: str, tmp_path: Path) -> None:
    nav = build_activities(tmp_path / "artifacts")
    planning = PlanningActivities(engine_for=nav.engine)  # shares the worker's engine cache
    tools = CodeToolActivities(engine_for=nav.engine, store=nav.store)
    worker = build_worker(
        client, task_queue, activities=nav, extra_activities=[*planning.all(), *tools.all()],
        extra_workflows=[PlanningProbe],
    )
    async with worker:
        result = await client.execute_workflow(
            PlanningProbe.run,
            ProbeInput(repo_root=str(FIXTURE), goal=GOAL),
            id=f"probe-{uuid.uuid4()}",
            task_queue=task_queue,
            execution_timeout=timedelta(seconds=120),
            result_type=ProbeResult,
        )
    assert not result.direct and result.stages >= 2
    assert result.stop_reason == "loop_detected"
    assert not result.tool_ok and "refused" in (result.tool_error or "")
    assert result.criteria_met and not all(result.criteria_met)
    assert result.reflection == "rewrite" and "Revisit stage 1" in result.plan_markdown
    assert result.summary.startswith("Steps 1-24")
