"""The investigation end to end with the embedded offline model (deterministic, free)."""

from __future__ import annotations

import json
from pathlib import Path

from temporalio.client import Client

from durable_navigator.navcore.investigation.investigation import InvestigationState
from durable_navigator.workflows.investigation import InvestigationWorkflow

from tests.support.batch import priced_activities
from tests.support.investigation import investigation_request, start_investigation


async def test_offline_investigation_plans_runs_stages_and_writes_a_checked_report(
        client: Client, task_queue: str, tmp_path: Path, start_worker) -> None:
    req = investigation_request(tmp_path)
    async with start_worker(priced_activities(tmp_path)):
        handle = await start_investigation(client, task_queue, req)
        result = await handle.result()
        state: InvestigationState = await handle.query(InvestigationWorkflow.get_investigation)
    assert result.stop_reason.value == "finalized" and result.completed_normally
    assert result.plan_rounds >= 1 and result.stages == 2  # two clauses → two stages
    assert len(result.children) >= 2 and all(c.kind == "research" for c in result.children)
    assert result.cost_micros == 0  # offline is free
    report = Path(result.report_path or "").read_text()
    data = json.loads(Path(result.report_json_path or "").read_text())
    assert "## Stage 0" in report and "## Open questions" in report
    assert data["criteria_total"] == result.criteria_total and data["workflow"] == "investigation"
    # every evidence citation names lines that exist in the repository
    for st in state.stages:
        for c in st.criteria_status:
            assert not c.met or c.evidence
            for cite in c.evidence:
                path, lines = cite.rsplit(":", 1)
                n = len((Path(req.repo_path) / path).read_text().splitlines())
                assert int(lines.split("-")[-1]) <= n
    assert result.criteria_met >= 1
