"""The worker logs one line per run started, finished and failed — and nothing when it replays."""

from __future__ import annotations

import logging
import uuid
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowFailureError
from temporalio.worker import Replayer

from durable_navigator.workers.converter import DATA_CONVERTER
from durable_navigator.workers.runlog import RunLogInterceptor
from durable_navigator.workers.worker import WORKFLOW_FAILURE_EXCEPTION_TYPES, WORKFLOWS
from tests.support.navigator import ZOOM_BUDGET, ScriptProvider, make_activities, make_request, run


def _lines(caplog: pytest.LogCaptureFixture, wf_id: str) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == "temporalio.workflow" and r.getMessage().startswith("run ") and wf_id in r.getMessage()]


async def test_one_line_per_run_started_finished_and_failed(
    client: Client, task_queue: str, start_worker, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="temporalio.workflow")
    ok_id, bad_id = f"nav-ok-{uuid.uuid4().hex[:8]}", f"nav-bad-{uuid.uuid4().hex[:8]}"
    async with start_worker(make_activities(tmp_path, ScriptProvider(steps=[ZOOM_BUDGET]))):
        result = await run(client, task_queue, make_request(tmp_path), ok_id)
        with pytest.raises(WorkflowFailureError):
            await run(client, task_queue, make_request(tmp_path, repo_path=str(tmp_path / "gone")), bad_id)

    ok = _lines(caplog, ok_id)
    assert [line.split(":")[0] for line in ok] == ["run started", "run finished"], ok
    assert ok[0].startswith(f"run started: NavigatorWorkflow {ok_id} (run ") and f"task queue {task_queue}" in ok[0]
    assert ok[1].startswith(f"run finished: NavigatorWorkflow {ok_id} in ")
    assert f": {result.stop_reason.value}, cost {result.cost_usd:.4f} USD (" in ok[1], ok[1]

    bad = _lines(caplog, bad_id)
    assert [line.split(":")[0] for line in bad] == ["run started", "run failed"], bad
    assert "scan failed" in bad[1] and "gone" in bad[1]
    failed = [r for r in caplog.records if r.getMessage() == bad[1]]
    assert failed[0].levelno == logging.WARNING

    # replaying the same history logs nothing (a restarted worker does not repeat old runs)
    caplog.clear()
    history = await client.get_workflow_handle(ok_id).fetch_history()
    replayer = Replayer(workflows=WORKFLOWS, data_converter=DATA_CONVERTER,
                        interceptors=[RunLogInterceptor(WORKFLOW_FAILURE_EXCEPTION_TYPES)])
    await replayer.replay_workflow(history)
    assert _lines(caplog, ok_id) == []
