"""Replay every committed history in ``tests/histories/`` (all workflows) on every run.

A replay failure means workflow code changed in a way that breaks runs already
in flight: put the change behind ``workflow.patched`` or re-record on purpose.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from durable_navigator.workers.converter import DATA_CONVERTER
from durable_navigator.workers.worker import WORKFLOW_FAILURE_EXCEPTION_TYPES, WORKFLOWS

HISTORY_DIR = Path(__file__).resolve().parents[1] / "histories"
HISTORIES = sorted(HISTORY_DIR.glob("*.json"))


def test_batch_histories_are_committed() -> None:
    names = {p.stem.split("_run")[0] for p in HISTORIES}
    assert {"batch_basic", "batch_stop", "batch_continue_as_new", "batch_resume"} <= names


@pytest.mark.parametrize("path", HISTORIES, ids=[p.stem for p in HISTORIES])
async def test_replay_every_history(path: Path) -> None:
    history = WorkflowHistory.from_json(path.stem, path.read_text())
    replayer = Replayer(
        workflows=WORKFLOWS,
        data_converter=DATA_CONVERTER,
        workflow_failure_exception_types=WORKFLOW_FAILURE_EXCEPTION_TYPES,
    )
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None, f"{path.name}: {result.replay_failure}"
