"""Replay every committed NavigatorWorkflow history: the code must stay deterministic."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from workers.converter import DATA_CONVERTER
from workers.worker import WORKFLOW_FAILURE_EXCEPTION_TYPES, WORKFLOWS

HISTORIES = sorted(Path(__file__).parent.glob("navigator_*.json"))


def test_histories_are_committed() -> None:
    names = {p.stem.split("_run")[0] for p in HISTORIES}
    assert {"navigator_autonomous", "navigator_interactive", "navigator_budget_park", "navigator_continue_as_new"} <= names


@pytest.mark.parametrize("path", HISTORIES, ids=[p.stem for p in HISTORIES])
async def test_replay(path: Path) -> None:
    history = WorkflowHistory.from_json(path.stem, path.read_text())
    replayer = Replayer(
        workflows=WORKFLOWS,
        data_converter=DATA_CONVERTER,
        workflow_failure_exception_types=WORKFLOW_FAILURE_EXCEPTION_TYPES,
    )
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None, f"{path.name}: {result.replay_failure}"
