"""Workflow state in typed parts, carried through continue-as-new.

:class:`NavigatorState` is composed of parts the workflow building blocks
work on — :class:`RunStatus`, :class:`MapState`, the budget ledger,
:class:`DecisionLog`, :class:`Steering` (human verdicts), :class:`StageState`,
the guardrail memory — so another workflow composes the parts it needs.
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from durable_navigator.navcore.run.artifacts import ArtifactRef
# plain enums, no pydantic: the CLI's light command signatures use them too
from durable_navigator.navtypes.runmodes import ExecutionMode, Status
from durable_navigator.navcore.run.budget import BudgetLedger
from durable_navigator.navtypes.flightplan import FlightPlan, FlightPlanUpdate
from durable_navigator.navcore.navigator.guardrails import GuardrailState
from durable_navigator.navtypes.mapmeta import MapMetadata
from durable_navigator.navcore.planning.planning import CriteriaCheck, StagePlan
from durable_navigator.navcore.model.pricing import ModelPricingRates
from durable_navigator.navcore.model.routing import RoutingState
from durable_navigator.navcore.run.tools import ToolResult

__all__ = [
    "RunStatus",
    "MapState",
    "DecisionLog",
    "Steering",
    "StageState",
    "ExecutionMode",
    "Status",
    "StopReason",
    "Verdict",
    "DecisionLogEntry",
    "PendingTurn",
    "MessageNote",
    "NavigatorState",
]


class StopReason(str, Enum):
    """Why an exploration ended (always explicit)."""

    FINALIZED = "finalized"
    BUDGET_EXHAUSTED = "budget_exhausted"
    MAX_ITERATIONS = "max_iterations"
    STOPPED = "stopped"
    APPROVAL_TIMEOUT = "approval_timeout"
    FAILED = "failed"
    #: the same flight plan / near-identical decisions kept coming (guardrail)
    LOOP_DETECTED = "loop_detected"
    #: the run scheduled its profile's maximum number of activities (guardrail)
    ACTIVITY_CAP = "activity_cap"
    #: too many iterations without a better map, when the profile stops on it
    STALLED = "stalled"


Verdict = Literal["approve", "reject", "stop"]

#: entries of the note list kept in state (older ones are dropped)
MAX_MESSAGE_NOTES = 50


class DecisionLogEntry(BaseModel):
    """One logged navigator step."""

    model_config = ConfigDict(extra="forbid")

    step: int = Field(ge=0)
    action: str  #: update_flight_plan | finalize_context | invalid | rejected | budget_refused
    reasoning: str = ""
    #: the validated update that was applied (None for finalize / invalid)
    config_diff: FlightPlanUpdate | None = None
    #: human-readable diff lines, e.g. "+ rule src/budget/** → L4"
    diff_lines: list[str] = []
    cost_micros: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    attempts: int = 1
    map_tokens_before: int = 0
    map_tokens_after: int = 0
    at: datetime
    verdict: str | None = None
    feedback: str | None = None
    error: str | None = None
    #: full decision (untruncated reasoning) in the artifact store
    decision_ref: ArtifactRef | None = None


class PendingTurn(BaseModel):
    """A proposed turn waiting for a human verdict (interactive mode)."""

    model_config = ConfigDict(extra="forbid")

    turn: int
    #: "plan": the stage plan of the planning phase (its round, 1 or 2, is ``turn``);
    #: "turn": a map turn (``turn`` = iteration). A verdict names both, so an answer
    #: meant for the plan can never approve a map turn with the same number.
    kind: Literal["turn", "plan"] = "turn"
    previous_plan: FlightPlan
    previous_map_ref: ArtifactRef | None = None
    previous_metadata: MapMetadata | None = None
    previous_view_ref: ArtifactRef | None = None
    proposed_plan: FlightPlan
    edited: bool = False
    verdict: Verdict | None = None
    verdict_sender: str | None = None
    feedback: str | None = None


class MessageNote(BaseModel):
    """A message the workflow received and ignored (stale, duplicate) or applied."""

    model_config = ConfigDict(extra="forbid")

    kind: str
    sender: str
    turn: int | None = None
    note: str


class RunStatus(BaseModel):
    """Where a run is and why it ended (any workflow)."""

    model_config = ConfigDict(extra="forbid")

    status: Status = Status.STARTING
    stop_reason: StopReason | None = None
    stop_detail: str | None = None
    #: decisions made (model turns that returned), 0 before the first
    iteration: int = 0
    continued_runs: int = 0
    #: activities scheduled so far (the profile's hard cap is the third safety layer)
    activities_used: int = 0
    #: the model's closing summary (shortened), written into the result
    final_summary: str | None = None
    #: the task queue of the host whose index of the repository is warm ("" : the shared queue);
    #: renders and code tools go there (``workflows/blocks/affinity.py``)
    host_queue: str = ""

    def stop(self, reason: StopReason, detail: str) -> bool:
        """Record the first stop reason; later ones are ignored (False)."""
        if self.stop_reason is not None:
            return False
        self.stop_reason, self.stop_detail = reason, detail
        return True


class MapState(BaseModel):
    """The current flight plan and the map rendered under it (by reference)."""

    model_config = ConfigDict(extra="forbid")

    flight_plan: FlightPlan
    map_ref: ArtifactRef | None = None
    #: the stored ``MapView`` (full metadata + flight plan) of ``map_ref``
    view_ref: ArtifactRef | None = None
    metadata: MapMetadata | None = None
    index_version: str = ""


class DecisionLog(BaseModel):
    """The decision log (bounded by compression) and what the turn report shows of it."""

    model_config = ConfigDict(extra="forbid")

    entries: list[DecisionLogEntry] = []
    #: entries ever logged (compression folds the list, not this)
    logged: int = 0
    #: compressions done so far (the scripted summarizer keys by it)
    compressions: int = 0
    last_reasoning: str = ""
    #: the last step's full decision in the artifact store (history keeps its reasoning trimmed)
    last_decision_ref: ArtifactRef | None = None
    last_diff_lines: list[str] = []
    last_cost_micros: int = 0


class Steering(BaseModel):
    """What humans asked: mode, the pending verdict, feedback, stop, and message notes."""

    model_config = ConfigDict(extra="forbid")

    mode: ExecutionMode = ExecutionMode.AUTONOMOUS
    pending: PendingTurn | None = None
    #: feedback of the last rejected turn, shown to the model next prompt
    feedback: str | None = None
    stop_requested: str | None = None
    stop_sender: str | None = None
    notes: list[MessageNote] = []

    def note(self, kind: str, sender: str, turn: int | None, note: str) -> None:
        """Remember a message outcome, keeping only the most recent ones."""
        self.notes.append(MessageNote(kind=kind, sender=sender, turn=turn, note=note))
        del self.notes[:-MAX_MESSAGE_NOTES]


class StageState(BaseModel):
    """The stage plan of the planning phase and the progress through it."""

    model_config = ConfigDict(extra="forbid")

    #: None: no planning, one open-ended run
    plan: StagePlan | None = None
    #: the stage being worked on (index into ``plan.stages``)
    index: int = 0
    #: decisions made in the current stage
    iterations: int = 0
    #: the model finalized the current (non-final) stage
    done: bool = False
    #: criteria checks of finished stages, in order
    criteria: list[CriteriaCheck] = []


class NavigatorState(BaseModel):
    """Everything the navigator workflow knows, in typed parts; small enough for history."""

    model_config = ConfigDict(extra="forbid")

    goal: str
    repo_root: str
    model: str
    #: the goal text in the artifact store (set by scan)
    goal_ref: ArtifactRef | None = None
    #: the model's price (from scan)
    model_rates: ModelPricingRates | None = None
    #: the price of every model the run may call (its own and those its routing rules name), from scan
    prices: dict[str, ModelPricingRates] = {}
    #: which model serves each kind of call, and the switches so far (budget-aware routing)
    routing: RoutingState = RoutingState()
    run: RunStatus = RunStatus()
    map: MapState
    ledger: BudgetLedger
    log: DecisionLog = DecisionLog()
    steering: Steering = Steering()
    stages: StageState = StageState()
    #: guardrail memory (bounded window of observations; loop / stall detection)
    guard: GuardrailState = GuardrailState()
    #: results of the last decision's tool calls, shown in the next prompt only
    tool_results: list[ToolResult] = []
