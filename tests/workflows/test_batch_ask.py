"""Batch research jobs (``kind: ask``): child ResearchWorkflows beside explorations, one budget."""

from __future__ import annotations

import json
from pathlib import Path

from durable_navigator.activities.batch import parse_jobs_text
from durable_navigator.navcore.batch.batch import BatchResult, JobStatus, resolve_jobs
from durable_navigator.navcore.run.budget import usd_to_micros

from tests.support.batch import batch_request, job, priced_activities, start_batch, write_script
from tests.support.research import write_research_script, text_answer, finish_answer


def test_jobs_file_takes_kind_per_job_and_in_defaults() -> None:
    spec = parse_jobs_text("defaults: {kind: ask}\njobs:\n  - {repo: ., goal: 'how is the budget enforced?'}\n"
                           "  - {repo: ., goal: budget enforcement context, kind: explore}\n")
    assert [j.kind for j in resolve_jobs(spec)] == ["ask", "explore"]


async def test_an_ask_job_runs_a_research_child_beside_an_exploration(client, task_queue, start_worker,
                                                                      tmp_path: Path) -> None:
    research = write_research_script(tmp_path / "research.yaml", {
        "research.plan": [text_answer('["read the plugin"]')],
        "research.execute": ["", finish_answer(("after_call records usage", "src/budgetkit/plugin.py:26-29"))],
        "research.refine": [text_answer("DECISION: FINISH\nREASON: found it")],
        "research.synthesize": [text_answer("after_call records usage (src/budgetkit/plugin.py:26-29).")],
    })
    explore = write_script(tmp_path / "explore.yaml", steps=1)
    req = batch_request(tmp_path, [job(0, explore), job(1, research, kind="ask")])
    async with start_worker(priced_activities(tmp_path)):
        result: BatchResult = await (await start_batch(client, task_queue, req)).result()
    explored, asked = result.outcomes
    assert [o.status for o in result.outcomes] == [JobStatus.COMPLETED] * 2
    assert (explored.kind, asked.kind) == ("explore", "ask")
    assert asked.workflow_id.endswith("-job-00001") and asked.completed_normally is True
    assert asked.context_path and asked.context_path.endswith("answer.md")
    assert "src/budgetkit/plugin.py:26-29" in Path(asked.context_path).read_text()
    assert asked.spent_micros == 4 * 1200 and asked.iterations == 1
    assert usd_to_micros(result.spent_usd) == explored.spent_micros + asked.spent_micros
    rows = [json.loads(line) for line in Path(result.results_path or "").read_text().splitlines()]
    assert [r["kind"] for r in rows] == ["explore", "ask"]
