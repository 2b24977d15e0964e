"""The one model interface: model specs, requests, responses and typed tasks.

Every model call of every workflow — a navigator turn, a planning phase call,
a stage check, a reflection, a decision-log compression — is one
:class:`ModelRequest` answered by one :class:`ModelResponse`, served by the
one ``model.request`` activity for every provider (``offline``, ``scripted``,
``gemini-*``, and OpenAI-compatible ``<endpoint>:<model>``).

* LLM providers read ``messages``, ``tools`` and ``output_schema``;
* deterministic models (the offline policy, the scripted model) read the
  typed ``task``, which carries the structured inputs the prompt was built
  from (never credentials);
* :func:`parse_model_spec` is the one parser of model names, used by the CLI,
  the pricing table and the provider registry.

Pure and deterministic (pydantic + stdlib): safe in the workflow sandbox.
Requests live in the artifact store; only references enter history.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field

from durable_navigator.navcore.model.call_kinds import InvestigateKind, TaskKind
from durable_navigator.navcore.run.compression import SummaryRequest
from durable_navigator.navcore.run.decision import TokenUsage
from durable_navigator.navcore.run.findings import Finding
from durable_navigator.navcore.planning.investigation_plan import PlannedStage
from durable_navigator.navtypes.flightplan import FlightPlan
from durable_navigator.navtypes.mapmeta import FileSummary, MapMetadata
from durable_navigator.navcore.model.modelspec import BUILTIN_OPENAI_PREFIXES, ModelSpec, Provider, parse_model_spec
from durable_navigator.navcore.planning.planning import (
    PlanningAnalysis,
    CriteriaCheck,
    PlanningConfig,
    PlanReview,
    Stage,
    StagePlan,
)

__all__ = [
    "BUILTIN_OPENAI_PREFIXES",
    "Provider",
    "ModelSpec",
    "parse_model_spec",
    "Message",
    "ToolSpec",
    "ToolCallOut",
    "DecideTask",
    "AnalyzeCall",
    "ReviewCall",
    "PlanCall",
    "ReflectCall",
    "CompressCall",
    "AnalyzeTask",
    "ReviewTask",
    "PlanTask",
    "CriteriaTask",
    "ReflectTask",
    "CompressTask",
    "ExecTurn",
    "ResearchPlanTask",
    "ResearchExecuteTask",
    "ResearchRefineTask",
    "ResearchSynthesizeTask",
    "ModelTask",
    "TaskKind",
    "ModelRequest",
    "ModelResponse",
    "StreamGuard",
]

class StreamGuard(BaseModel):
    """How long a streaming model answer may stay silent.

    ``first_chunk_timeout_s``: from sending the request to the first chunk (the
    model may think first); ``inter_chunk_timeout_s``: between two chunks. When
    one fires the HTTP connection is closed and the attempt fails retryably
    (``ModelStalled``), booking what the stream had reported.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    first_chunk_timeout_s: float = Field(60.0, gt=0, le=3600)
    inter_chunk_timeout_s: float = Field(30.0, gt=0, le=3600)


class Message(BaseModel):
    """One conversation message (system, user, or the model's own earlier turn)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Literal["system", "user", "assistant"]
    content: str = ""
    #: an assistant turn's function calls (for a corrective re-ask that quotes them)
    tool_calls: list["ToolCallOut"] = []
    #: a user turn answering the previous assistant turn's function calls: one result per call
    #: (providers with function calling send them as function responses)
    tool_results: list[str] = []


class ToolSpec(BaseModel):
    """A function the model may call: name, description, JSON-schema parameters."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: Annotated[str, Field(min_length=1, max_length=64)]
    description: str
    parameters: dict[str, Any]


class ToolCallOut(BaseModel):
    """One function call in a model's answer (arguments as the model gave them)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    args: dict[str, Any] = {}
    #: the arguments as the model sent them, when they were not a JSON object (``args`` is then
    #: empty): the call is unusable and gets a corrective re-ask that quotes this text
    raw_arguments: str | None = None


class _Task(BaseModel):
    model_config = ConfigDict(extra="forbid")

    goal: str
    repo_root: str
    #: which call of this kind (navigator iteration, stage index, compression ordinal):
    #: deterministic models and scripts key their answers by it
    index: int = Field(0, ge=0)


class DecideTask(_Task):
    """A navigator turn: update the flight plan, call code tools, or finalize."""

    kind: Literal["decide"] = "decide"
    flight_plan: FlightPlan
    max_iterations: int
    map_metadata: MapMetadata | None = None
    feedback: str | None = None
    #: (action, reasoning) of the most recent decisions, oldest first
    recent_decisions: list[tuple[str, str]] = []
    #: the caller runs ``call_tools`` decisions (the workflow does; the benchmark loop may not)
    tools_available: bool = True
    #: results of the previous turn's tool calls, as the prompt shows them
    tool_results: list[str] = []


class AnalyzeCall(BaseModel):
    """What an analysis call carries, both to the model (:class:`AnalyzeTask`) and from the workflow
    (``AnalyzeSpec``): declared once. So are the review, plan, reflection and compression calls."""

    kind: Literal["planning.analyze"] = "planning.analyze"
    config: PlanningConfig
    map_metadata: MapMetadata | None = None


class ReviewCall(BaseModel):
    """What a plan review carries (critic, pragmatist, detailer)."""

    kind: Literal["planning.review"] = "planning.review"
    config: PlanningConfig
    analysis: PlanningAnalysis
    map_metadata: MapMetadata | None = None


class PlanCall(BaseModel):
    """What a stage-plan call carries (a re-plan carries the user's feedback in the analysis)."""

    kind: Literal["planning.plan"] = "planning.plan"
    config: PlanningConfig
    analysis: PlanningAnalysis
    review: PlanReview | None = None
    map_metadata: MapMetadata | None = None


class ReflectCall(BaseModel):
    """What a reflection after a stage carries."""

    kind: Literal["stages.reflect"] = "stages.reflect"
    config: PlanningConfig
    plan: StagePlan
    completed_index: int = Field(ge=0)
    check: CriteriaCheck


class CompressCall(BaseModel):
    """What a decision-log compression carries."""

    kind: Literal["navigator.compress"] = "navigator.compress"
    request: SummaryRequest


# the payload first, the base second: the base's fields come first (the field order of the JSON unchanged)
class AnalyzeTask(AnalyzeCall, _Task):
    """Planning: DIRECT, or an analysis ending ``REFLECT: yes|no``."""


class ReviewTask(ReviewCall, _Task):
    """Planning: critic, pragmatist, detailer."""


class PlanTask(PlanCall, _Task):
    """Planning: the stage plan."""


class CriteriaTask(_Task):
    """A stage's end: which success criteria the current map meets."""

    kind: Literal["stages.check_criteria"] = "stages.check_criteria"
    config: PlanningConfig
    stage: Stage
    map_text: str = ""
    files: list[FileSummary] = []
    map_metadata: MapMetadata | None = None


class ReflectTask(ReflectCall, _Task):
    """A stage's end: keep or rewrite the remaining stages."""


class CompressTask(CompressCall, _Task):
    """Summarize older decision-log entries."""


class ExecTurn(BaseModel):
    """One executor turn of a research step: the model's calls and what they returned."""

    model_config = ConfigDict(extra="forbid")

    calls: list[ToolCallOut] = []
    text: str = ""
    #: the results, as the prompt shows them (repository data)
    results: list[str] = []


class _ResearchTask(_Task):
    #: the profile's extra instructions (shown as guidance, never as a role change)
    instructions: str = ""
    #: the run's findings so far, one line each (claim + citations)
    findings: list[str] = []


class ResearchPlanTask(_ResearchTask):
    """Research: write the steps of one round (``index`` = the round, 0-based)."""

    kind: Literal["research.plan"] = "research.plan"
    max_steps: int = Field(ge=1)
    #: what the refinery found missing (a re-plan covers only that)
    missing: str | None = None
    #: the user's feedback on a rejected plan or step
    feedback: str | None = None
    #: steps already run, with their status
    done_steps: list[str] = []
    #: "name: description" of the profiles a step may be delegated to
    profiles: list[str] = []
    map_metadata: MapMetadata | None = None
    map_excerpt: str = ""


class ResearchExecuteTask(_ResearchTask):
    """Research: one ReAct turn of the executor (``index`` = the run's executor turn, 1-based)."""

    kind: Literal["research.execute"] = "research.execute"
    step_index: int = Field(ge=0)
    step: str
    #: this turn within the step (1-based) and the step's cap
    turn: int = Field(ge=1)
    max_turns: int = Field(ge=1)
    transcript: list[ExecTurn] = []
    #: guardrail notes (iteration budget, goal anchor, loop / stall warnings)
    notes: list[str] = []
    tools: list[str] = []
    #: "name: description" of the profiles ``delegate`` may start (empty: no delegation)
    profiles: list[str] = []
    can_navigate: bool = False
    max_tool_calls: int = Field(6, ge=1)


class ResearchRefineTask(_ResearchTask):
    """Research: CONTINUE (with what is missing) or FINISH (``index`` = the round)."""

    kind: Literal["research.refine"] = "research.refine"
    max_rounds: int = Field(ge=1)
    steps: list[str] = []
    feedback: str | None = None


class ResearchSynthesizeTask(_ResearchTask):
    """Research: the answer from the findings, every claim cited ``path:start-end``."""

    kind: Literal["research.synthesize"] = "research.synthesize"
    #: the findings themselves (quotes included), for deterministic writers
    all_findings: list[Finding] = []
    #: why the answer is written before the refinery said FINISH (a stop, a cap, the budget)
    early: str | None = None


class InvestigateTask(_Task):
    """An investigation's own calls: plan maker, reviewer, confirmation, criteria checker, reflector.

    ``index`` counts the calls of this kind in the run (scripts and deterministic models key by it).
    """

    kind: InvestigateKind
    #: what the reviewer / confirmation judges: the plan, or a stage's work
    subject: Literal["plan", "stage"] = "plan"
    max_stages: int = Field(4, ge=1)
    #: the plan under review, or (reflect) the whole plan
    stages: list[PlannedStage] = []
    #: the stage under work (review / confirm / criteria), by index into ``stages``
    stage: PlannedStage | None = None
    stage_index: int = Field(0, ge=0)
    critique: str = ""
    feedback: str | None = None
    #: the stage's findings, one line each (claim + citations), and the findings themselves
    findings: list[str] = []
    all_findings: list[Finding] = []
    #: compressed records of the stages done so far
    records: list[str] = []
    #: criteria status lines so far (reflect)
    status: list[str] = []
    loop: int = Field(0, ge=0)
    max_loops: int = Field(1, ge=1)
    #: compress: the stage's worker answer summary
    summary: str = ""


ModelTask = Annotated[
    Union[DecideTask, AnalyzeTask, ReviewTask, PlanTask, CriteriaTask, ReflectTask, CompressTask,
          ResearchPlanTask, ResearchExecuteTask, ResearchRefineTask, ResearchSynthesizeTask, InvestigateTask],
    Field(discriminator="kind"),
]


class ModelRequest(BaseModel):
    """One model call: messages, optional function declarations, optional output schema, the task."""

    model_config = ConfigDict(extra="forbid")

    model: str
    messages: list[Message] = Field(min_length=1)
    tools: list[ToolSpec] = []
    #: ``required``: answer with a function call (the navigator turn); ``auto``: may answer in text
    tool_choice: Literal["auto", "required", "none"] = "auto"
    #: JSON schema the text answer must follow (providers with structured output use it)
    output_schema: dict[str, Any] | None = None
    max_output_tokens: int = Field(ge=1)
    task: ModelTask

    @property
    def system(self) -> str:
        """The system instruction (empty when there is none)."""
        return "\n\n".join(m.content for m in self.messages if m.role == "system")

    @property
    def conversation(self) -> list[Message]:
        """Every message but the system instruction."""
        return [m for m in self.messages if m.role != "system"]


class ModelResponse(BaseModel):
    """A model's answer: text and/or function calls, and what the call(s) used."""

    model_config = ConfigDict(extra="forbid")

    text: str = ""
    tool_calls: list[ToolCallOut] = []
    usage: TokenUsage = TokenUsage()
    #: provider HTTP calls this answer took
    calls: int = Field(1, ge=0)
