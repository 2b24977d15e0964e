"""Replay every committed NavigatorWorkflow history: the code must stay deterministic."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from durable_navigator.workers.converter import DATA_CONVERTER
from durable_navigator.workers.worker import WORKFLOW_FAILURE_EXCEPTION_TYPES, WORKFLOWS

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


def test_one_history_goes_through_every_planning_and_guardrail_path() -> None:
    """``navigator_all_paths``: planning with review, a stage re-plan, compression, a tool call,
    loop and stall warnings — so the replay above covers all of them in one run."""
    path = Path(__file__).parent / "navigator_all_paths.json"
    text = path.read_text()
    history = WorkflowHistory.from_json(path.stem, text)
    scheduled = [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
    ]
    for name in ("planning.analyze", "planning.review", "planning.plan", "stages.check_criteria",
                 "stages.reflect", "navigator.compress", "tools.search_codebase"):
        assert name in scheduled, f"{name} missing from {path.name}"
    # the warnings reach the prompt builder's input (the prompt itself is an artifact)
    prompt_inputs = [
        DATA_CONVERTER.payload_converter.from_payloads(
            e.activity_task_scheduled_event_attributes.input.payloads)[0]
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
        and e.activity_task_scheduled_event_attributes.activity_type.name == "navigator.build_prompt"
    ]
    notes = " ".join(" ".join(inp.get("notes", [])) if isinstance(inp, dict) else "" for inp in prompt_inputs)
    assert "LOOP WARNING" in notes and "STALL WARNING" in notes
    assert any("Find reserve" in " ".join(i.get("stage", [])) for i in prompt_inputs if isinstance(i, dict))
