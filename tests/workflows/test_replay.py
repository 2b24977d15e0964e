"""Replay every committed history (every workflow): the code must stay deterministic.

Nothing has been released, so a deliberate workflow change re-records these
(``python -m tests.histories.record`` / ``record_batch`` / ``record_preflight`` / ``record_research`` /
``record_investigation``); versioning with ``workflow.patched``
starts with the first tagged release.

``exported/`` holds histories written by ``navigator export ID`` (``history/*.json`` of the case folder),
dropped in unchanged; they replay here like the recorded ones (``record_exported`` re-records the one
committed there through the CLI).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from durable_navigator.navcore.evaluation.cases import workflow_id_of
from durable_navigator.workers.converter import DATA_CONVERTER
from durable_navigator.workers.worker import WORKFLOW_FAILURE_EXCEPTION_TYPES, WORKFLOWS

HISTORY_DIR = Path(__file__).resolve().parents[1] / "histories"
#: where ``navigator export``'s histories go, unchanged
EXPORTED_DIR = HISTORY_DIR / "exported"
HISTORIES = sorted(HISTORY_DIR.glob("*.json")) + sorted(EXPORTED_DIR.glob("*.json"))


async def replay(path: Path) -> None:
    """Replay one history file with the worker's workflows and data converter; fail on any nondeterminism."""
    # a run that started children replays under its recorded id: the file's name (without ``_run<n>``)
    history = WorkflowHistory.from_json(workflow_id_of(path.stem), path.read_text())
    replayer = Replayer(
        workflows=WORKFLOWS,
        data_converter=DATA_CONVERTER,
        workflow_failure_exception_types=WORKFLOW_FAILURE_EXCEPTION_TYPES,
    )
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None, f"{path.name}: {result.replay_failure}"


def test_histories_are_committed() -> None:
    names = {p.stem.split("_run")[0] for p in HISTORIES}
    assert {"navigator_autonomous", "navigator_interactive", "navigator_budget_park", "navigator_continue_as_new",
            "batch_basic", "batch_stop", "batch_continue_as_new", "batch_resume",
            "research_full_loop", "research_offline", "research_stop", "research_interactive",
            "research_continue_as_new", "investigation_scripted", "investigation_offline", "investigation_stop",
            "investigation_branches", "investigation_continue_as_new", "investigation_explore_branches",
            "investigation_steering"} <= names
    # at least one history as `navigator export` wrote it (record_exported), so the drop-in path stays covered
    assert any(p.parent == EXPORTED_DIR for p in HISTORIES)


@pytest.mark.parametrize("path", HISTORIES, ids=[str(p.relative_to(HISTORY_DIR).with_suffix("")) for p in HISTORIES])
async def test_replay(path: Path) -> None:
    await replay(path)


def _scheduled(history: WorkflowHistory, name: str) -> list:
    return [
        DATA_CONVERTER.payload_converter.from_payloads(e.activity_task_scheduled_event_attributes.input.payloads)[0]
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
        and e.activity_task_scheduled_event_attributes.activity_type.name == name
    ]


def test_one_history_goes_through_every_planning_and_guardrail_path() -> None:
    """``navigator_all_paths``: planning with review, a stage re-plan, compression, a tool call,
    loop and stall warnings — so the replay above covers all of them in one run."""
    path = HISTORY_DIR / "navigator_all_paths.json"
    history = WorkflowHistory.from_json(path.stem, path.read_text())
    kinds = [inp["spec"]["kind"] for inp in _scheduled(history, "model.prepare")]
    for kind in ("planning.analyze", "planning.review", "planning.plan", "stages.check_criteria",
                 "stages.reflect", "navigator.compress", "decide"):
        assert kind in kinds, f"{kind} missing from {path.name}"
    assert _scheduled(history, "tools.search_codebase")
    # the warnings reach the prompt builder's input (the prompt itself is an artifact)
    prompts = [inp["spec"]["prompt"] for inp in _scheduled(history, "model.prepare") if inp["spec"]["kind"] == "decide"]
    notes = " ".join(" ".join(p.get("notes", [])) for p in prompts)
    assert "LOOP WARNING" in notes and "STALL WARNING" in notes
    assert any("Find reserve" in " ".join(p.get("stage", [])) for p in prompts)


def test_research_histories_cover_every_research_call_and_both_kinds_of_subagent() -> None:
    """``research_subagents``: a parent, its research child and its navigator child — all replayed above."""
    kinds, types = set(), set()
    for path in sorted(HISTORY_DIR.glob("research_*.json")):
        history = WorkflowHistory.from_json(path.stem, path.read_text())
        kinds |= {inp["spec"]["kind"] for inp in _scheduled(history, "model.prepare")}
        start = history.events[0].workflow_execution_started_event_attributes
        types.add(start.workflow_type.name)
    assert {"research.plan", "research.execute", "research.refine", "research.synthesize"} <= kinds
    assert {"ResearchWorkflow", "NavigatorWorkflow"} <= types


def test_the_routing_history_switches_models() -> None:
    """``navigator_routing``: turns move to a second model past the budget threshold; compression is on it."""
    path = HISTORY_DIR / "navigator_routing.json"
    history = WorkflowHistory.from_json(path.stem, path.read_text())
    calls = [(inp["spec"]["kind"], inp["model"]) for inp in _scheduled(history, "model.prepare")]
    decide = [model for kind, model in calls if kind == "decide"]
    assert decide[0] == "test-model" and decide[-1] == "test-model-b", calls
    assert decide == sorted(decide, key=lambda m: m == "test-model-b")  # one switch, never back
    assert {model for kind, model in calls if kind == "navigator.compress"} == {"test-model-b"}, calls


def test_the_snapshot_history_names_its_repository_by_locator_in_every_step() -> None:
    """``navigator_snapshot``: the input's source is a snapshot, and every step carries its locator (any host
    resolves it), never the directory one worker built it in."""
    path = HISTORY_DIR / "navigator_snapshot.json"
    history = WorkflowHistory.from_json(path.stem, path.read_text())
    started = history.events[0].workflow_execution_started_event_attributes.input.payloads
    source = DATA_CONVERTER.payload_converter.from_payloads(started)[0]["source"]
    assert source["kind"] == "snapshot"
    roots = {inp["repo_root"] for name in ("navigator.scan", "navigator.render_map", "navigator.write_result")
             for inp in _scheduled(history, name)}
    assert roots == {f"snapshot:{source['manifest_sha256']}+{source['manifest_size']}:{source['label']}"}


def test_investigation_histories_cover_every_investigation_call_and_activity() -> None:
    """The investigation histories hold every call kind, the evidence check, branch scoring and the report."""
    kinds, activities = set(), set()
    for path in sorted(HISTORY_DIR.glob("investigation_*.json")):
        history = WorkflowHistory.from_json(path.stem, path.read_text())
        kinds |= {inp["spec"]["kind"] for inp in _scheduled(history, "model.prepare")}
        activities |= {e.activity_task_scheduled_event_attributes.activity_type.name for e in history.events
                       if e.HasField("activity_task_scheduled_event_attributes")}
    assert {"investigate.plan", "investigate.review", "investigate.confirm", "investigate.criteria",
            "investigate.reflect", "investigate.compress"} <= kinds
    assert {"investigate.check_evidence", "investigate.score_branches", "investigate.write_report",
            "research.aggregate"} <= activities


def test_the_steering_history_holds_the_plan_edit_and_the_budget_park() -> None:
    """An accepted ``edit_stage_plan`` update (the refused one never entered history) and a ``raise_budget``."""
    path = HISTORY_DIR / "investigation_steering.json"
    history = WorkflowHistory.from_json(path.stem, path.read_text())
    updates = [e.workflow_execution_update_accepted_event_attributes.accepted_request.input.name
               for e in history.events if e.HasField("workflow_execution_update_accepted_event_attributes")]
    signals = [e.workflow_execution_signaled_event_attributes.signal_name for e in history.events
               if e.HasField("workflow_execution_signaled_event_attributes")]
    assert updates == ["edit_stage_plan", "submit_verdict"]
    assert [s for s in signals if s != "child_event"] == ["raise_budget"]


def test_the_tool_calls_history_follows_the_scanning_host() -> None:
    """``navigator_tool_calls``: recorded with a host queue (as ``navigator worker`` runs), so the replay
    goes through the affinity block: the scan on the shared queue, every render, tool, model request and
    the result on the host's; the model calls themselves on the shared queue."""
    from temporalio.api.enums.v1 import EventType

    from durable_navigator.workers.worker import HOST_ACTIVITIES

    path = HISTORY_DIR / "navigator_tool_calls.json"
    history = WorkflowHistory.from_json(path.stem, path.read_text())
    queues = [(e.activity_task_scheduled_event_attributes.activity_type.name,
               e.activity_task_scheduled_event_attributes.task_queue.name)
              for e in history.events if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED]
    bound = [(name, queue) for name, queue in queues if name in HOST_ACTIVITIES or name.startswith("tools.")]
    assert bound[0][0] == "navigator.scan" and "/host/" not in bound[0][1]
    assert len(bound) >= 5 and all("/host/" in queue for _, queue in bound[1:]), bound
    assert {"model.prepare", "navigator.render_map", "navigator.write_result"} <= {name for name, _ in bound}
    assert all("/host/" not in queue for name, queue in queues if name == "model.request")
