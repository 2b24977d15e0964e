"""Signal, query and update payloads of ``NavigatorWorkflow``: one model each.

Every message says who sent it; verdicts also name the turn they answer, so a
stale or duplicated verdict (an old turn, a second click) is ignored and logged.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from durable_navigator.navtypes.flightplan import FlightPlan, FlightPlanUpdate
from durable_navigator.navcore.planning.investigation_plan import PlannedStage
from durable_navigator.navcore.navigator.state import ExecutionMode

__all__ = [
    "ApproveInput",
    "RejectInput",
    "StopInput",
    "SetModeInput",
    "RaiseBudgetInput",
    "EditFlightPlanInput",
    "EditStagePlanInput",
    "StagePlanEdited",
    "VerdictInput",
    "VerdictOutcome",
    "SIGNAL_APPROVE",
    "SIGNAL_REJECT",
    "SIGNAL_STOP",
    "SIGNAL_SET_MODE",
    "SIGNAL_RAISE_BUDGET",
    "QUERY_STATUS",
    "QUERY_DECISION_LOG",
    "QUERY_FLIGHT_PLAN",
    "QUERY_BATCH_PROGRESS",
    "BATCH_WORKFLOW",
    "UPDATE_EDIT_FLIGHT_PLAN",
    "UPDATE_EDIT_STAGE_PLAN",
    "UPDATE_VERDICT",
]

# Stable message names: public API, never renamed.
SIGNAL_APPROVE = "approve"
SIGNAL_REJECT = "reject"
SIGNAL_STOP = "stop"
SIGNAL_SET_MODE = "set_mode"
SIGNAL_RAISE_BUDGET = "raise_budget"
QUERY_STATUS = "get_status"
QUERY_DECISION_LOG = "get_decision_log"
QUERY_FLIGHT_PLAN = "get_flight_plan"
#: a batch's counts and spend (a batch answers this instead of ``get_status``)
QUERY_BATCH_PROGRESS = "get_progress"
#: the batch workflow's registered type name
BATCH_WORKFLOW = "BatchWorkflow"
UPDATE_EDIT_FLIGHT_PLAN = "edit_flight_plan"
#: an investigation's stage plan, edited while it awaits its verdict
UPDATE_EDIT_STAGE_PLAN = "edit_stage_plan"
#: approve / reject as an update: the sender learns whether the run took the verdict
UPDATE_VERDICT = "submit_verdict"

Sender = Annotated[str, Field(min_length=1, max_length=200)]


class _Msg(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    sender: Sender = "cli"


#: what a verdict answers: a map turn or the stage plan (see ``PendingTurn.kind``)
VerdictKind = Literal["turn", "plan"]


class ApproveInput(_Msg):
    """Accept the proposed turn ``turn`` (or round ``turn`` of the stage plan)."""

    turn: int = Field(ge=1)
    kind: VerdictKind = "turn"


class RejectInput(_Msg):
    """Undo the proposed turn ``turn``; ``feedback`` is shown to the model next turn."""

    turn: int = Field(ge=1)
    kind: VerdictKind = "turn"
    feedback: Annotated[str, Field(max_length=4000)] = ""


class VerdictInput(_Msg):
    """Approve or reject turn ``turn`` (or round ``turn`` of the stage plan) and hear the outcome.

    The update's validator refuses a verdict the run would ignore (no such turn
    pending, a verdict of the other kind, an already answered turn), so the
    sender gets an error instead of silence.
    """

    verdict: Literal["approve", "reject"]
    turn: int = Field(ge=1)
    kind: VerdictKind = "turn"
    feedback: Annotated[str, Field(max_length=4000)] = ""


class VerdictOutcome(BaseModel):
    """What the run did with a :class:`VerdictInput`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    verdict: Literal["approve", "reject"]
    turn: int
    kind: VerdictKind
    applied: bool
    detail: str


class StopInput(_Msg):
    """Finalize now with the best map so far (not a cancel)."""

    reason: Annotated[str, Field(max_length=500)] = "stopped by user"
    #: the turn the sender saw; informational (a stop is never stale)
    turn: int | None = None


class SetModeInput(_Msg):
    """Switch between autonomous and interactive."""

    mode: ExecutionMode


class RaiseBudgetInput(_Msg):
    """Add ``add_usd`` to the run's USD limit (also answers a budget park)."""

    #: at least one micro-dollar: the ledger counts whole micro-dollars
    add_usd: Annotated[Decimal, Field(ge=Decimal("0.000001"), le=100_000)]


class EditFlightPlanInput(_Msg):
    """Amend the proposed plan of turn ``turn`` before approving it.

    Give either ``update`` (merged into the proposed plan) or a whole ``plan``.
    """

    turn: int = Field(ge=1)
    update: FlightPlanUpdate | None = None
    plan: FlightPlan | None = None

    @model_validator(mode="after")
    def _one_of(self) -> "EditFlightPlanInput":
        if (self.update is None) == (self.plan is None):
            raise ValueError("give exactly one of 'update' or 'plan'")
        return self


class EditStagePlanInput(_Msg):
    """Replace the stage plan of round ``turn`` (awaiting its verdict) by ``stages``; approve it to run them.

    The update's validator checks the stages against the run (count, profiles, blank fields) and
    refuses a bad plan with one line naming the field, before the edit enters history.
    """

    turn: int = Field(ge=1)
    stages: list[PlannedStage] = Field(min_length=1, max_length=24)


class StagePlanEdited(BaseModel):
    """What an ``edit_stage_plan`` update did."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    turn: int
    titles: list[str]
    detail: str
