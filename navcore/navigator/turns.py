"""Pure state transitions of a navigator turn (used by the workflow's handlers).

Kept out of ``workflows/navigator.py`` so they are unit-testable without a
server and the workflow module stays orchestration only. Nothing here reads
clocks or the environment.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from durable_navigator.navcore.navigator.activity_io import RecentDecision
from durable_navigator.navcore.run.compression import SUMMARY_ACTIONS
from durable_navigator.navcore.run.budget import BudgetLedger, micros_to_usd, usd_to_micros
from durable_navigator.navcore.planning.criteria import verdict_counts
from durable_navigator.navtypes.errors import validation_lines
from durable_navigator.navtypes.flightplan import FlightPlan
from durable_navigator.navcore.navigator.messages import EditFlightPlanInput
from durable_navigator.navcore.navigator.prompt import RECENT_REASONING_CHARS
from durable_navigator.navcore.navigator.report import plan_diff_lines, shorten
from durable_navigator.navcore.navigator.requests import ExplorationRequest
from durable_navigator.navcore.navigator.state import (
    DecisionLog,
    MapState,
    NavigatorState,
    PendingTurn,
    Steering,
    Verdict,
)

__all__ = [
    "initial_state",
    "propose_turn",
    "restore_turn",
    "record_verdict",
    "verdict_problem",
    "request_stop",
    "edited_plan",
    "apply_edit",
    "recent_decisions",
    "report_dict",
    "MODEL_SWITCH_ACTION",
]

#: the decision-log action of a routing switch (navcore.model.routing)
MODEL_SWITCH_ACTION = "model_switch"
#: logged entries that are not the model's decisions, so never quoted back to it as such
_NOT_QUOTED = frozenset({"budget_refused", MODEL_SWITCH_ACTION})


def initial_state(req: ExplorationRequest) -> NavigatorState:
    """The state of a new exploration (or the carried one after continue-as-new)."""
    if req.carried_state is not None:
        return req.carried_state
    return NavigatorState(
        goal=req.goal,
        repo_root=req.repo_path,
        model=req.model,
        steering=Steering(mode=req.mode),
        ledger=BudgetLedger(max_micros=usd_to_micros(req.budget_usd)),
        map=MapState(flight_plan=req.first_plan()),
    )


def propose_turn(state: NavigatorState, turn: int, proposed: FlightPlan) -> PendingTurn:
    """A pending turn that remembers the committed plan and map (for a reject)."""
    m = state.map
    return PendingTurn(
        turn=turn,
        previous_plan=m.flight_plan,
        previous_map_ref=m.map_ref,
        previous_metadata=m.metadata,
        previous_view_ref=m.view_ref,
        proposed_plan=proposed,
    )


def restore_turn(state: NavigatorState, pending: PendingTurn) -> None:
    """Undo a proposal: the plan and map of before it are current again."""
    m = state.map
    m.flight_plan = pending.previous_plan
    m.map_ref, m.view_ref = pending.previous_map_ref, pending.previous_view_ref
    m.metadata = pending.previous_metadata


def verdict_problem(state: Steering, turn: int, kind: str = "turn", plan: str = "the stage plan") -> str | None:
    """Why a verdict for ``kind`` ``turn`` would be ignored now, or ``None`` when it would apply.

    ``plan``: what the workflow's ``kind: plan`` verdicts answer (the research plan, say).
    """
    pending = state.pending
    what = f"{plan} (round" if kind == "plan" else "turn"
    if pending is None:
        return f"no turn is awaiting a verdict, so {what} {turn}{')' if kind == 'plan' else ''} cannot be answered"
    now = f"{plan} (round {pending.turn})" if pending.kind == "plan" else f"turn {pending.turn}"
    if pending.turn != turn or pending.kind != kind:
        return f"{what} {turn}{')' if kind == 'plan' else ''} is not awaiting a verdict; {now} is"
    if pending.verdict is not None:
        return f"{now} was already answered ({pending.verdict} by {pending.verdict_sender})"
    return None


def record_verdict(
    state: Steering, verdict: Verdict, turn: int, sender: str, feedback: str | None,
    kind: str = "turn", plan: str = "the stage plan",
) -> bool:
    """Apply a verdict to the pending turn; False (and a note) when stale or duplicate.

    ``kind`` must match too: a verdict for the stage plan never lands on a map turn.
    """
    problem = verdict_problem(state, turn, kind, plan)
    if problem is not None:
        state.note(verdict, sender, turn, f"ignored: {problem}")
        return False
    pending = state.pending
    assert pending is not None  # verdict_problem checked it
    pending.verdict, pending.verdict_sender, pending.feedback = verdict, sender, feedback
    state.note(verdict, sender, turn, "applied")
    return True


def request_stop(state: Steering, reason: str, sender: str, turn: int | None) -> bool:
    """Ask the run to finalize; the first stop wins, later ones are noted and ignored."""
    if state.stop_requested is not None:
        state.note("stop", sender, turn, "ignored: duplicate stop")
        return False
    state.stop_requested, state.stop_sender = reason, sender
    state.note("stop", sender, turn, "applied")
    return True


def edited_plan(state: Steering, inp: EditFlightPlanInput) -> FlightPlan:
    """The plan an edit would propose; ``ValueError`` (or a validation error) if refused."""
    pending = state.pending
    if pending is None or pending.verdict is not None:
        raise ValueError("no turn is awaiting approval; edit the plan while a turn is pending")
    if inp.turn != pending.turn:
        raise ValueError(f"turn {inp.turn} is not the pending turn {pending.turn}; refresh the status")
    try:
        if inp.plan is not None:
            # re-validate: the payload may have been built without validation by a client; a human's
            # whole plan pins everything it sets explicitly
            plan = FlightPlan.model_validate(inp.plan.model_dump())
            keys = [r.glob for r in plan.rules] + [f.glob for f in plan.focus_paths]
            keys += [f.symbol for f in plan.focus_symbols] + list(plan.exclude)
            return plan.model_copy(update={"pinned": list(dict.fromkeys([*plan.pinned, *keys]))[:256]})
        if inp.update is None:
            raise ValueError("give exactly one of 'update' or 'plan'")
        # a human's edit: everything it touches is pinned (later model turns cannot undo it)
        return pending.proposed_plan.apply(inp.update.pinned())
    except ValidationError as exc:
        # one line that names each field (the sender sees this message)
        raise ValueError("invalid plan: " + "; ".join(validation_lines(exc))) from None


def apply_edit(state: NavigatorState, inp: EditFlightPlanInput) -> FlightPlan:
    """Make the edited plan the proposal of the pending turn and return it."""
    plan = edited_plan(state.steering, inp)
    pending = state.steering.pending
    assert pending is not None  # edited_plan checked it
    pending.proposed_plan, pending.edited, state.map.flight_plan = plan, True, plan
    state.log.last_diff_lines = plan_diff_lines(pending.previous_plan, plan)
    state.steering.note("edit_flight_plan", inp.sender, inp.turn, "applied")
    return plan


def recent_decisions(log: DecisionLog, count: int) -> list[RecentDecision]:
    """The decision-log summaries, then the last ``count`` decisions, for the prompt.

    Decisions travel by reference to their artifacts; summary entries (from
    compression) have no artifact and carry their text, which is already
    capped by the compression config, so the prompt stays bounded.
    """
    summaries = [e for e in log.entries if e.action in SUMMARY_ACTIONS]
    entries = [e for e in log.entries if e.action not in _NOT_QUOTED and e.action not in SUMMARY_ACTIONS]
    quoted = [
        RecentDecision(step=e.step, action=e.action, reasoning=e.reasoning, diff_lines=e.diff_lines[:1])
        for e in summaries
    ]
    return quoted + [
        RecentDecision(
            step=e.step,
            action=e.action,
            # the prompt activity reads reasoning and diff from the decision artifact
            reasoning="" if e.decision_ref else shorten(e.error or e.reasoning, RECENT_REASONING_CHARS),
            diff_lines=[] if e.decision_ref else e.diff_lines[:4],
            verdict=e.verdict,
            decision_ref=e.decision_ref,
        )
        for e in (entries[-count:] if count else [])
    ]


def report_dict(state: NavigatorState, workflow_id: str) -> dict[str, Any]:
    """The content of ``report.json`` (JSON-ready, keys sorted when dumped)."""
    s = state
    return {
        "goal": s.goal,
        "repo_root": s.repo_root,
        "model": s.model,
        "workflow_id": workflow_id,
        "stop_reason": s.run.stop_reason.value if s.run.stop_reason else None,
        "stop_detail": s.run.stop_detail,
        "iterations": s.run.iteration,
        "cost_usd": str(micros_to_usd(s.ledger.spent_micros)),
        "max_usd": str(micros_to_usd(s.ledger.max_micros)),
        "ledger": s.ledger.model_dump(mode="json"),
        "tokens": s.ledger.total_usage().model_dump(mode="json"),
        "flight_plan": s.map.flight_plan.model_dump(mode="json"),
        "map_metadata": s.map.metadata.model_dump(mode="json") if s.map.metadata else None,
        "decisions": [e.model_dump(mode="json") for e in s.log.entries],
        "notes": [n.model_dump(mode="json") for n in s.steering.notes],
        "continued_runs": s.run.continued_runs,
        "index_version": s.map.index_version,
        "planning_fallback": s.stages.plan.fallback if s.stages.plan else None,
        # every stage's criteria verdicts: met / not_met / unchecked (what the checker could not verify)
        "criteria": [c.model_dump(mode="json") for c in s.stages.criteria],
        "criteria_counts": dict(verdict_counts([r for c in s.stages.criteria for r in c.results])),
        # budget-aware routing: the model serving each kind of call at the end, every switch (also in
        # "decisions" as model_switch entries), and the rates each model's calls were priced at
        "routing": {
            "current": dict(sorted(s.routing.current.items())),
            "switches": [w.model_dump(mode="json") for w in s.routing.switches],
            "switch_count": s.routing.switch_count,
        },
        "prices": {m: r.model_dump(mode="json", exclude_none=True) for m, r in sorted(s.prices.items())},
    }
