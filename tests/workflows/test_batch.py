"""BatchWorkflow against a real dev server: fan-out, failure isolation, shared budget, resume."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

from tests.support.batch import BATCH_TIMEOUT, FIXTURE_REPO, batch_request, job, priced_activities, start_batch, write_script
from temporalio.client import WorkflowExecutionStatus

from durable_navigator.navcore.batch.batch import BatchProgress, BatchResult, BatchStopInput, JobStatus
from durable_navigator.navcore.run.budget import usd_to_micros
from durable_navigator.workflows.batch import BatchWorkflow


async def test_three_job_offline_batch_completes(client, task_queue, start_worker, tmp_path) -> None:
    req = batch_request(tmp_path, [job(i, "offline") for i in range(3)], max_concurrency=2)
    async with start_worker(priced_activities(tmp_path)):
        handle = await start_batch(client, task_queue, req)
        result: BatchResult = await handle.result()
        progress = await handle.query(BatchWorkflow.get_progress)
    assert [o.status for o in result.outcomes] == [JobStatus.COMPLETED] * 3
    assert all(o.stop_reason in {"finalized", "max_iterations"} for o in result.outcomes)
    assert progress.done and progress.completed == 3 and progress.pending == 0 and progress.running == 0
    for outcome in result.outcomes:
        assert outcome.workflow_id == f"{req.batch_id}-job-{outcome.index:05d}"
        assert Path(outcome.context_path or "").is_file()
        assert outcome.iterations >= 1 and outcome.decisions >= 1
    rows = [json.loads(line) for line in Path(result.results_path or "").read_text().splitlines()]
    assert [r["index"] for r in rows] == [0, 1, 2]
    assert {"cost_usd", "usage", "iterations", "stop_reason", "context_path"} <= set(rows[0])
    summary = json.loads(Path(result.summary_path or "").read_text())
    assert summary["status_counts"] == {"completed": 3} and len(summary["context_packs"]) == 3


async def test_failing_job_is_isolated_and_reported(client, task_queue, start_worker, tmp_path) -> None:
    script = write_script(tmp_path / "s.yaml", steps=1)
    jobs = [job(0, script), job(1, script, repo=tmp_path / "no-such-repo"), job(2, script)]
    req = batch_request(tmp_path, jobs, max_concurrency=1)
    async with start_worker(priced_activities(tmp_path)):
        result = await (await start_batch(client, task_queue, req)).result()
    statuses = [o.status for o in result.outcomes]
    assert statuses == [JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.COMPLETED]
    failed = result.outcomes[1]
    assert "does not exist" in (failed.error or "") and failed.stop_reason == "failed"
    # a scan failure happens before any model call: its slice goes back to the pool
    assert failed.spent_micros == 0
    rows = [json.loads(line) for line in Path(result.results_path or "").read_text().splitlines()]
    assert rows[1]["status"] == "failed" and "does not exist" in rows[1]["error"]


async def test_shared_budget_never_exceeded_and_unused_slices_returned(
    client, task_queue, start_worker, tmp_path
) -> None:
    # each decision costs 1000 × $1/M + 100 × $2/M = 1,200 micro-dollars
    script = write_script(tmp_path / "s.yaml", steps=2)
    total = Decimal("0.05")
    req = batch_request(tmp_path, [job(i, script) for i in range(4)], total_budget_usd=total, max_concurrency=1)
    async with start_worker(priced_activities(tmp_path)):
        result = await (await start_batch(client, task_queue, req)).result()
    outcomes = result.outcomes
    assert [o.status for o in outcomes] == [JobStatus.COMPLETED] * 4
    assert [o.spent_micros for o in outcomes] == [3 * 1200] * 4
    assert sum(o.spent_micros for o in outcomes) == usd_to_micros(result.spent_usd) <= usd_to_micros(total)
    # slice = remaining / jobs not started; what job k did not spend raises job k+1's slice
    remaining, expected = usd_to_micros(total), []
    for k in range(4):
        expected.append(remaining // (4 - k))
        remaining -= 3 * 1200
    assert [o.allotted_micros for o in outcomes] == expected
    assert expected == sorted(expected) and expected[3] > expected[0]


async def test_tight_budget_skips_or_stops_jobs_but_never_passes_the_total(
    client, task_queue, start_worker, tmp_path
) -> None:
    # the shared pool runs dry: children refuse calls they cannot afford, later jobs get nothing
    script = write_script(tmp_path / "s.yaml", steps=5, input_tokens=200, output_tokens=20)
    total = Decimal("0.004")
    req = batch_request(tmp_path, [job(i, script) for i in range(4)], total_budget_usd=total, max_concurrency=2)
    async with start_worker(priced_activities(tmp_path)):
        handle = await start_batch(client, task_queue, req)
        result = await handle.result()
    spent = sum(o.spent_micros for o in result.outcomes)
    assert spent == usd_to_micros(result.spent_usd) <= usd_to_micros(total)
    assert any(o.stop_reason == "budget_exhausted" for o in result.outcomes)
    # every child's slice was a share of what was left, never more
    assert sum(o.allotted_micros for o in result.outcomes[:2]) <= usd_to_micros(total)


async def test_rerun_with_same_id_resumes_without_duplicates(client, task_queue, start_worker, tmp_path) -> None:
    script = write_script(tmp_path / "s.yaml", steps=1)
    req = batch_request(tmp_path, [job(i, script) for i in range(3)], max_concurrency=3)
    async with start_worker(priced_activities(tmp_path)):
        first = await (await start_batch(client, task_queue, req)).result()
        second = await (await start_batch(client, task_queue, req)).result()
    assert [o.recovered for o in first.outcomes] == [False] * 3
    assert [o.recovered for o in second.outcomes] == [True] * 3
    assert [o.spent_micros for o in second.outcomes] == [o.spent_micros for o in first.outcomes]
    # exactly one NavigatorWorkflow run per job id: nothing explored twice
    for outcome in first.outcomes:
        runs = [w async for w in client.list_workflows(f"WorkflowId = '{outcome.workflow_id}'")]
        assert len(runs) == 1 and runs[0].status == WorkflowExecutionStatus.COMPLETED


async def test_stop_skips_pending_jobs_and_continue_as_new_keeps_outcomes(
    client, task_queue, start_worker, tmp_path
) -> None:
    from durable_navigator.navcore.batch.batch import BatchLimits

    script = write_script(tmp_path / "s.yaml", steps=1)
    limits = BatchLimits(job_timeout_s=90, continue_as_new_after_jobs=2)
    req = batch_request(tmp_path, [job(i, script) for i in range(5)], max_concurrency=1, limits=limits)
    async with start_worker(priced_activities(tmp_path)):
        handle = await start_batch(client, task_queue, req)
        result = await handle.result()
        assert result.continued_runs == 2
        assert [o.status for o in result.outcomes] == [JobStatus.COMPLETED] * 5

        stop_req = batch_request(tmp_path, [job(i, script) for i in range(6)], max_concurrency=1)
        stop_handle = await start_batch(client, task_queue, stop_req)
        await stop_handle.signal(BatchWorkflow.stop, BatchStopInput(reason="enough for today", sender="test"))
        stopped = await stop_handle.result()
        progress: BatchProgress = await stop_handle.query(BatchWorkflow.get_progress)
    assert stopped.stopped == "enough for today"
    assert stopped.count(JobStatus.SKIPPED) >= 4
    assert all(o.stop_reason in {"stopped", "finalized"} for o in stopped.outcomes)
    assert progress.done and progress.skipped == stopped.count(JobStatus.SKIPPED)
    assert BATCH_TIMEOUT.total_seconds() > 0


async def test_resume_reruns_failed_jobs_and_joins_a_running_batch(client, task_queue, start_worker, tmp_path) -> None:
    import shutil

    from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy

    script = write_script(tmp_path / "s.yaml", steps=1)
    late_repo = tmp_path / "late-repo"
    req = batch_request(tmp_path, [job(0, script), job(1, script, repo=late_repo)], max_concurrency=1)
    opts = dict(id=req.batch_id, task_queue=task_queue, execution_timeout=BATCH_TIMEOUT,
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
                id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE)
    async with start_worker(priced_activities(tmp_path)):
        first_handle = await client.start_workflow(BatchWorkflow.run, req, **opts)
        joined = await client.start_workflow(BatchWorkflow.run, req, **opts)  # same id while running: joins
        assert joined.result_run_id == first_handle.result_run_id
        first = await first_handle.result()
        assert [o.status for o in first.outcomes] == [JobStatus.COMPLETED, JobStatus.FAILED]
        shutil.copytree(FIXTURE_REPO, late_repo)  # the operator fixes the failed job's input
        second = await (await client.start_workflow(BatchWorkflow.run, req, **opts)).result()
    assert [o.status for o in second.outcomes] == [JobStatus.COMPLETED, JobStatus.COMPLETED]
    assert [o.recovered for o in second.outcomes] == [True, False]  # completed: recovered; failed: re-run
    runs = [w async for w in client.list_workflows(f"WorkflowId = '{second.outcomes[0].workflow_id}'")]
    assert len(runs) == 1


async def test_stop_reaches_running_children_which_finalize_best_so_far(
    client, task_queue, start_worker, tmp_path
) -> None:
    import asyncio

    from tests.support.navigator import ZOOM_BUDGET, ScriptProvider, wait_for
    from temporalio.service import RPCError
    from tests.support.navigator import make_activities

    provider = ScriptProvider(steps=[ZOOM_BUDGET] * 10, delay_s=0.4)
    jobs = [job(i, "test-model", max_iterations=10) for i in range(4)]
    req = batch_request(tmp_path, jobs, max_concurrency=2)
    async with start_worker(make_activities(tmp_path, provider)):
        handle = await start_batch(client, task_queue, req)
        child = client.get_workflow_handle(f"{req.batch_id}-job-00001")
        for _ in range(100):  # the child exists once the batch has started it
            try:
                await child.describe()
                break
            except RPCError:
                await asyncio.sleep(0.1)
        await wait_for(child, lambda r: r.step >= 2)
        await handle.signal(BatchWorkflow.stop, BatchStopInput(reason="night is over", sender="ops"))
        result = await handle.result()
    running, pending = result.outcomes[:2], result.outcomes[2:]
    assert [o.stop_reason for o in running] == ["stopped", "stopped"]
    assert all(o.status is JobStatus.COMPLETED and Path(o.context_path or "").is_file() for o in running)
    assert all(1 <= o.iterations < 10 for o in running)
    assert [o.status for o in pending] == [JobStatus.SKIPPED] * 2
    assert "night is over" in (pending[0].error or "")
