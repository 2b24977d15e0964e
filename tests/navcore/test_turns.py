"""Pure turn transitions (navcore.navigator.turns): verdicts, stops, edits, recent decisions."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tests.support.navigator import ZOOM_BUDGET, update
from pydantic import ValidationError

from durable_navigator.navcore.run.artifacts import ArtifactRef
from durable_navigator.navcore.navigator.messages import EditFlightPlanInput
from durable_navigator.navcore.navigator.requests import ExplorationRequest
from durable_navigator.navcore.navigator.state import DecisionLogEntry
from durable_navigator.navcore.navigator.turns import (
    apply_edit,
    edited_plan,
    initial_state,
    propose_turn,
    recent_decisions,
    record_verdict,
    request_stop,
    restore_turn,
)

AT = datetime(2026, 1, 1, tzinfo=timezone.utc)


def _state():  # type: ignore[no-untyped-def]
    state = initial_state(ExplorationRequest(repo_path="/r", goal="g"))
    state.steering.pending = propose_turn(state, 1, state.map.flight_plan.apply(ZOOM_BUDGET))
    return state


def test_verdicts_stale_and_duplicate_are_ignored_and_noted() -> None:
    steering = _state().steering
    assert not record_verdict(steering, "approve", 2, "bob", None)  # stale
    assert record_verdict(steering, "reject", 1, "alice", "no")
    assert not record_verdict(steering, "approve", 1, "bob", None)  # duplicate
    assert steering.pending is not None and steering.pending.verdict == "reject"
    assert [n.note.split(":")[0] for n in steering.notes] == ["ignored", "applied", "ignored"]
    assert request_stop(steering, "enough", "carol", None) and not request_stop(steering, "again", "dan", None)
    assert steering.stop_sender == "carol"


def test_edits_are_validated_and_restore_undoes_a_proposal() -> None:
    state = _state()
    with pytest.raises(ValueError, match="not the pending turn"):
        edited_plan(state.steering, EditFlightPlanInput(turn=3, update=update(add_exclude=["docs"])))
    with pytest.raises(ValidationError):
        edited_plan(state.steering, EditFlightPlanInput(turn=1, update=update(add_exclude=["../etc"])))
    plan = apply_edit(state, EditFlightPlanInput(turn=1, update=update(add_exclude=["docs"])))
    assert plan.exclude == ["docs"] and state.map.flight_plan == plan and state.log.last_diff_lines == [
        "+ rule src/budgetkit/** → L4", "+ focus src/budgetkit", "+ exclude docs"]
    assert state.steering.pending is not None
    restore_turn(state, state.steering.pending)
    assert state.map.flight_plan.rules == [] and state.map.flight_plan.exclude == []
    state.steering.pending = None
    with pytest.raises(ValueError, match="no turn is awaiting approval"):
        edited_plan(state.steering, EditFlightPlanInput(turn=1, update=update(add_exclude=["docs"])))


@given(st.lists(st.sampled_from(["update_flight_plan", "invalid", "budget_refused", "failed"]), max_size=30),
       st.integers(0, 8))
def test_recent_decisions_are_the_last_n_non_refusals(actions: list[str], count: int) -> None:
    state = initial_state(ExplorationRequest(repo_path="/r", goal="g"))
    ref = ArtifactRef(sha256="a" * 64, size=1)
    for step, action in enumerate(actions, start=1):
        has_ref = action in ("update_flight_plan", "invalid")
        state.log.entries.append(DecisionLogEntry(step=step, action=action, at=AT, error="boom",
                                                   decision_ref=ref if has_ref else None))
    recent = recent_decisions(state.log, count)
    expected = [e.step for e in state.log.entries if e.action != "budget_refused"]
    assert [r.step for r in recent] == (expected[-count:] if count else [])
    assert all(r.reasoning == ("" if r.decision_ref else "boom") for r in recent)
