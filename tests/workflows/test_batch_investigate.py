"""Batch investigation jobs (``kind: investigate``): a child InvestigationWorkflow on the job's slice."""

from __future__ import annotations

import json
from pathlib import Path

from durable_navigator.activities.batch import parse_jobs_text
from durable_navigator.navcore.batch.batch import BatchResult, JobStatus, resolve_jobs
from durable_navigator.navcore.run.budget import usd_to_micros

from tests.support.batch import batch_request, job, priced_activities, start_batch
from tests.support.investigation import GOAL


def test_jobs_file_takes_kind_investigate() -> None:
    spec = parse_jobs_text("jobs:\n  - {repo: ., goal: 'audit the budget checks; list gaps', kind: investigate}\n")
    assert [j.kind for j in resolve_jobs(spec)] == ["investigate"]


async def test_an_investigate_job_runs_an_investigation_child_and_lists_its_report(
        client, task_queue, start_worker, tmp_path: Path) -> None:
    req = batch_request(tmp_path, [job(0, "offline", kind="investigate", goal=GOAL)])
    async with start_worker(priced_activities(tmp_path)):
        result: BatchResult = await (await start_batch(client, task_queue, req)).result()
    [outcome] = result.outcomes
    assert outcome.status is JobStatus.COMPLETED and outcome.kind == "investigate"
    assert outcome.completed_normally is True and outcome.stop_reason == "finalized"
    assert outcome.context_path and outcome.context_path.endswith("report.md")
    assert "## Stage 0" in Path(outcome.context_path).read_text()
    assert outcome.report_path and json.loads(Path(outcome.report_path).read_text())["workflow"] == "investigation"
    assert usd_to_micros(result.spent_usd) == outcome.spent_micros == 0
