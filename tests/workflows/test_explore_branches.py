"""``ExploreBranchesWorkflow`` (``navigator explore --branches N``) against the dev server, offline."""

from __future__ import annotations

import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowQueryFailedError

from durable_navigator.navcore.batch.branches import BranchExploreResult
from durable_navigator.navcore.navigator.messages import StopInput
from durable_navigator.navcore.navigator.report import TurnReport
from durable_navigator.navcore.navigator.state import StopReason
from durable_navigator.workflows.branches import ExploreBranchesWorkflow

from tests.support.batch import priced_activities
from tests.support.investigation import branch_request


async def test_two_branches_run_in_parallel_and_the_best_scoring_pack_is_kept(
        client: Client, task_queue: str, tmp_path: Path, start_worker) -> None:
    req = branch_request(tmp_path)
    async with start_worker(priced_activities(tmp_path)):
        result: BranchExploreResult = await client.execute_workflow(
            ExploreBranchesWorkflow.run, req, id=f"branches-{uuid.uuid4()}", task_queue=task_queue,
            execution_timeout=timedelta(seconds=180))
    assert result.completed_normally and len(result.children) == 2 and len(result.scores) == 2
    assert {c.profile for c in result.children} == {"branch-auto", "branch-off"}
    kept = [b for b in result.scores if b.kept]
    assert len(kept) == 1 and kept[0].score == max(b.score for b in result.scores)
    assert kept[0].workflow_id == result.kept and all(b.tokens > 0 and b.covered > 0 for b in result.scores)
    assert result.context_path and Path(result.context_path).is_file() and result.kept in result.context_path
    # equal slices of one hard-capped budget (each a reservation of half the start budget)
    slices = [c.slice_micros for c in result.children]
    assert abs(slices[0] - slices[1]) <= 2 and sum(slices) <= 1_000_000
    assert result.cost_micros == 0  # offline: free, the slices flowed back


async def test_a_branches_run_answers_stop_and_status_but_keeps_no_decision_log(
        client: Client, task_queue: str, tmp_path: Path, start_worker) -> None:
    """It inherits ``stop`` / ``get_status`` / ``status`` / ``child_event`` (``StoppableRun`` + ``ChildEvents``),
    not the verdict, mode, budget and decision-log handlers of a steerable run: it never waits for a verdict and
    its children hold their own budgets and logs."""
    req = branch_request(tmp_path)
    handle = await client.start_workflow(ExploreBranchesWorkflow.run, req, id=f"branches-{uuid.uuid4()}",
                                         task_queue=task_queue, execution_timeout=timedelta(seconds=180))
    # both signals wait in history for the first workflow task (no worker yet)
    await handle.signal("stop", None)  # a null payload is logged and ignored
    await handle.signal("stop", StopInput(reason="enough", sender="test"))
    async with start_worker(priced_activities(tmp_path)):
        result: BranchExploreResult = await handle.result()
        assert (await handle.query("status", result_type=TurnReport)).workflow == "branches"
        with pytest.raises(WorkflowQueryFailedError, match="get_decision_log"):
            await handle.query("get_decision_log")
    assert result.stop_reason is StopReason.STOPPED and result.stop_detail == "enough (by test)"
