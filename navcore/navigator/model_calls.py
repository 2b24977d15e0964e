"""Inputs and outputs of the two model activities, ``model.prepare`` and ``model.request``.

One model call from any workflow is:

1. ``model.prepare(PrepareInput)`` — build the :class:`~navcore.model.model.ModelRequest`
   for a prompt spec (small: references and settings), store it, and return
   its exact prompt size and the upper-bound cost of one HTTP call;
2. the workflow reserves that estimate in the run's ledger (refused past the
   limit) and checks the stop flag — before *every* attempt;
3. ``model.request(ModelCallInput)`` — one attempt: the provider call (plus at
   most ``max_reasks`` corrective re-asks, each checked against the
   attempt's ``allowance_micros`` first), parsed into a typed
   :data:`ModelResult`; what the attempt consumed is reported in the result,
   in a failure's details, in a cancellation's details, and in the last
   heartbeat (a crashed attempt is booked at its in-flight upper bound);
4. the workflow reconciles the reservation with that consumption.

Only references and small typed results enter history.
"""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field

from durable_navigator.navcore.model.call_kinds import INVESTIGATE_KINDS, InvestigateKind
from durable_navigator.navcore.navigator.activity_io import PromptInput
from durable_navigator.navcore.run.artifacts import ArtifactRef
from durable_navigator.navcore.model.model import (AnalyzeCall, CompressCall, PlanCall, ReflectCall, ReviewCall,
                                                   StreamGuard)
from durable_navigator.navcore.run.decision import ModelDecision, TokenUsage
from durable_navigator.navcore.run.findings import PlannedStep
from durable_navigator.navcore.planning.investigation_plan import CriterionStatus, PlannedStage, StageChange
from durable_navigator.navcore.model.model import ToolCallOut
from durable_navigator.navtypes.flightplan import FlightPlan
from durable_navigator.navtypes.mapmeta import MapMetadata
from durable_navigator.navcore.planning.planning import (
    CriteriaCheck,
    PlanningAnalysis,
    PlanningConfig,
    PlanReview,
    Reflection,
    Stage,
    StagePlan,
)
from durable_navigator.navcore.model.pricing import ModelPricingRates
from durable_navigator.navcore.run.tools import ToolCall

__all__ = [
    "StreamGuard",
    "DecideSpec",
    "AnalyzeSpec",
    "ReviewSpec",
    "PlanSpec",
    "CriteriaSpec",
    "ReflectSpec",
    "CompressSpec",
    "ResearchPlanSpec",
    "ResearchExecuteSpec",
    "ResearchRefineSpec",
    "ResearchSynthesizeSpec",
    "InvestigateSpec",
    "InvestigateOut",
    "INVESTIGATE_KINDS",
    "PromptSpec",
    "PrepareInput",
    "PreparedCall",
    "ModelCallInput",
    "AttemptUsage",
    "DecisionOut",
    "AnalysisOut",
    "ReviewOut",
    "PlanOut",
    "CheckOut",
    "ReflectionOut",
    "SummaryOut",
    "ResearchPlanOut",
    "ExecuteOut",
    "RefineOut",
    "AnswerOut",
    "ModelResult",
    "ModelCallOutput",
]


class _IO(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- prompt specs: what model.prepare builds a request from (small; refs only) ----


class _Spec(_IO):
    model: str
    repo_root: str
    #: the goal text in the artifact store (set by scan); never copied into history again
    goal_ref: ArtifactRef
    max_output_tokens: int = Field(ge=1)


class DecideSpec(_IO):
    """A navigator turn: the prompt of :class:`~navcore.navigator.activity_io.PromptInput`."""

    kind: Literal["decide"] = "decide"
    repo_root: str
    prompt: PromptInput


# the payload first (declared once with its task), the base second: the base's fields come first
class AnalyzeSpec(AnalyzeCall, _Spec):
    """Planning: analyze the goal (renders the coarse map for an excerpt)."""


class ReviewSpec(ReviewCall, _Spec):
    """Planning: critic / pragmatist / detailer."""


class PlanSpec(PlanCall, _Spec):
    """Planning: the stage plan (a re-plan carries the user's feedback in the analysis)."""


class CriteriaSpec(_Spec):
    """A stage's end: check its criteria against the map rendered under ``flight_plan``."""

    kind: Literal["stages.check_criteria"] = "stages.check_criteria"
    config: PlanningConfig
    stage_index: int = Field(ge=0)
    stage: Stage
    flight_plan: FlightPlan
    map_metadata: MapMetadata | None = None


class ReflectSpec(ReflectCall, _Spec):
    """A stage's end: keep or rewrite the remaining stages."""


class CompressSpec(CompressCall, _Spec):
    """Summarize older decision-log entries (``ordinal``: the how-many-th compression)."""

    ordinal: int = Field(0, ge=0)


class _ResearchSpec(_Spec):
    #: the run's merged findings (the prompt lists them)
    findings_ref: ArtifactRef | None = None
    #: the profile's extra instructions
    instructions: str = Field("", max_length=4000)


class ResearchPlanSpec(_ResearchSpec):
    """Research: the steps of round ``round`` (renders the coarse map for an excerpt)."""

    kind: Literal["research.plan"] = "research.plan"
    round: int = Field(ge=0)
    max_steps: int = Field(ge=1)
    missing: str | None = None
    feedback: str | None = None
    done_steps: list[str] = []
    profiles: list[str] = []
    map_metadata: MapMetadata | None = None
    map_excerpt_chars: int = Field(6000, ge=0, le=200_000)


class ResearchExecuteSpec(_ResearchSpec):
    """Research: one executor turn. After the first, the conversation so far is ``previous_ref`` (the
    last turn's stored request), answered by ``last_calls`` and their ``results``."""

    kind: Literal["research.execute"] = "research.execute"
    #: the run's executor turn (1-based): scripts and deterministic models key by it
    index: int = Field(ge=1)
    step_index: int = Field(ge=0)
    step: str = Field(min_length=1, max_length=1000)
    turn: int = Field(ge=1)
    max_turns: int = Field(ge=1)
    previous_ref: ArtifactRef | None = None
    last_calls: list[ToolCallOut] = []
    last_text: str = ""
    results: list[str] = []
    notes: list[str] = []
    tools: list[str] = []
    profiles: list[str] = []
    can_navigate: bool = False
    max_tool_calls: int = Field(6, ge=1, le=8)


class ResearchRefineSpec(_ResearchSpec):
    """Research: FINISH or CONTINUE after round ``round``."""

    kind: Literal["research.refine"] = "research.refine"
    round: int = Field(ge=0)
    max_rounds: int = Field(ge=1)
    steps: list[str] = []
    feedback: str | None = None


class ResearchSynthesizeSpec(_ResearchSpec):
    """Research: the cited answer from the findings."""

    kind: Literal["research.synthesize"] = "research.synthesize"
    early: str | None = None
    ordinal: int = Field(0, ge=0)




class InvestigateSpec(_Spec):
    """An investigation's own call (see :class:`~navcore.model.model.InvestigateTask`); findings by reference."""

    kind: InvestigateKind
    index: int = Field(0, ge=0)
    subject: Literal["plan", "stage"] = "plan"
    max_stages: int = Field(4, ge=1)
    stages: list[PlannedStage] = []
    stage: PlannedStage | None = None
    stage_index: int = Field(0, ge=0)
    critique: str = Field("", max_length=4000)
    feedback: str | None = Field(None, max_length=4000)
    #: the stage's findings (a ``FindingsDoc``) in the artifact store
    findings_ref: ArtifactRef | None = None
    records: list[str] = []
    status: list[str] = []
    loop: int = Field(0, ge=0)
    max_loops: int = Field(1, ge=1)
    #: compress: the stage's worker answer summary (short; the findings go by ``findings_ref``)
    summary: str = Field("", max_length=4000)


PromptSpec = Annotated[
    Union[DecideSpec, AnalyzeSpec, ReviewSpec, PlanSpec, CriteriaSpec, ReflectSpec, CompressSpec,
          ResearchPlanSpec, ResearchExecuteSpec, ResearchRefineSpec, ResearchSynthesizeSpec, InvestigateSpec],
    Field(discriminator="kind"),
]


class PrepareInput(_IO):
    """Build and store the request of one model call."""

    model: str
    spec: PromptSpec


class PreparedCall(_IO):
    """The stored request, its exact prompt size and the upper-bound cost of one HTTP call."""

    #: a :class:`~navcore.model.model.ModelRequest` as JSON
    request_ref: ArtifactRef
    prompt_tokens: int = Field(ge=0)
    max_output_tokens: int = Field(ge=1)
    #: one HTTP call: the prompt (with the provider tokenizer margin) at the input rate plus
    #: the output cap at the dearer of the output and thinking rates
    estimate_micros: int = Field(ge=0)
    rates: ModelPricingRates
    #: the task queue only the answering host polls ("" if none): its index is warm (affinity)
    host_queue: str = ""


# -- one attempt ---------------------------------------------------------------


class ModelCallInput(_IO):
    """One attempt of one model call."""

    model: str
    kind: str
    request_ref: ArtifactRef
    #: the workflow's attempt number (1-based): scripts and logs key by it
    attempt: int = Field(1, ge=1)
    #: what this attempt may spend at most, re-asks included (the run's remaining budget)
    allowance_micros: int = Field(ge=0)
    #: upper bound of one HTTP call (from ``model.prepare``)
    call_estimate_micros: int = Field(ge=0)
    prompt_tokens: int = Field(0, ge=0)
    max_reasks: int = Field(1, ge=0, le=3)
    stream: StreamGuard = StreamGuard()


class AttemptUsage(_IO):
    """What one attempt consumed (reported in results, failures, cancellations and heartbeats)."""

    usage: TokenUsage = TokenUsage()
    cost_micros: int = Field(0, ge=0)
    #: provider HTTP calls made
    calls: int = Field(0, ge=0)
    #: activity attempts these figures cover
    attempts: int = Field(1, ge=0)
    #: the upper bound of an HTTP call in flight when this was recorded (a crashed or
    #: lost attempt is booked at it, so the ledger never under-counts)
    in_flight_micros: int = Field(0, ge=0)

    def plus(self, usage: TokenUsage, cost_micros: int, calls: int) -> "AttemptUsage":
        """This record with more consumption added (and nothing in flight)."""
        return self.model_copy(
            update={
                "usage": self.usage + usage,
                "cost_micros": self.cost_micros + cost_micros,
                "calls": self.calls + calls,
                "in_flight_micros": 0,
            }
        )

    def booked_micros(self) -> int:
        """What the ledger charges for it: the known cost plus any in-flight upper bound."""
        return self.cost_micros + self.in_flight_micros


class DecisionOut(_IO):
    """A navigator turn (reasoning shortened for history; full text in ``decision_ref``)."""

    kind: Literal["decide"] = "decide"
    decision: ModelDecision
    decision_ref: ArtifactRef


class AnalysisOut(_IO):
    kind: Literal["planning.analyze"] = "planning.analyze"
    analysis: PlanningAnalysis


class ReviewOut(_IO):
    kind: Literal["planning.review"] = "planning.review"
    review: PlanReview


class PlanOut(_IO):
    kind: Literal["planning.plan"] = "planning.plan"
    plan: StagePlan


class CheckOut(_IO):
    kind: Literal["stages.check_criteria"] = "stages.check_criteria"
    check: CriteriaCheck


class ReflectionOut(_IO):
    kind: Literal["stages.reflect"] = "stages.reflect"
    reflection: Reflection


class SummaryOut(_IO):
    kind: Literal["navigator.compress"] = "navigator.compress"
    summary: str


class ResearchPlanOut(_IO):
    kind: Literal["research.plan"] = "research.plan"
    steps: list[PlannedStep] = Field(min_length=1)


class ExecuteOut(_IO):
    """One executor turn, as history keeps it (findings and full reasoning in the artifact store)."""

    kind: Literal["research.execute"] = "research.execute"
    action: Literal["call_tools", "finish_step", "delegate", "navigate", "invalid"]
    reasoning: str = Field("", max_length=2000)
    tool_calls: list[ToolCall] = []
    #: the raw function calls, echoed into the next turn's conversation
    calls: list[ToolCallOut] = []
    profile: str | None = None
    task: str | None = Field(None, max_length=2000)
    #: finish_step: the step's findings (a ``FindingsDoc``) and how many
    findings_ref: ArtifactRef | None = None
    findings: int = 0
    summary: str = Field("", max_length=2000)
    error: str | None = Field(None, max_length=2000)


class RefineOut(_IO):
    kind: Literal["research.refine"] = "research.refine"
    decision: Literal["finish", "continue"]
    missing: str | None = Field(None, max_length=1000)
    reason: str = Field("", max_length=1000)


class AnswerOut(_IO):
    """The synthesized answer (the text is in the artifact store)."""

    kind: Literal["research.synthesize"] = "research.synthesize"
    answer_ref: ArtifactRef
    summary: str = Field("", max_length=2000)
    citations: int = 0


class InvestigateOut(_IO):
    """The parsed answer of an investigation call (only the fields of its kind are set)."""

    kind: InvestigateKind
    #: plan maker: the stages
    stages: list[PlannedStage] = []
    #: reviewer: the critique
    critique: str = Field("", max_length=4000)
    #: confirmation: leave the loop?
    exit: bool = False
    reason: str = Field("", max_length=1000)
    #: criteria checker: one verdict per criterion (evidence not yet checked)
    criteria: list[CriterionStatus] = []
    #: reflector: remaining stages dropped / changed (plan indices) and stages added at the end
    drop: list[int] = []
    change: list[StageChange] = []
    add: list[PlannedStage] = []
    #: compression: the stage's record as history keeps it (trimmed) and the whole text in the artifact store
    record: str = Field("", max_length=4000)
    record_ref: ArtifactRef | None = None


ModelResult = Annotated[
    Union[DecisionOut, AnalysisOut, ReviewOut, PlanOut, CheckOut, ReflectionOut, SummaryOut,
          ResearchPlanOut, ExecuteOut, RefineOut, AnswerOut, InvestigateOut],
    Field(discriminator="kind"),
]


class ModelCallOutput(_IO):
    """The typed result of one attempt and what it consumed."""

    result: ModelResult
    spent: AttemptUsage
