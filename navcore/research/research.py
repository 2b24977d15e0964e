"""Code research: the request, the typed state, findings and the result of ``ResearchWorkflow``.

A research run answers a question about a repository with citations:

1. **plan** — a planner writes research steps (a JSON list; on failure one
   fallback step, :data:`FALLBACK_STEP`);
2. **execute** — per step, an executor runs a ReAct loop with the code tools
   (``search_codebase``, ``read_file``, ``list_directory``, ``get_callers``,
   ``get_callees``), and may delegate to a subagent (``delegate`` /
   ``navigate``), at most ``max_executor_turns`` turns;
3. **aggregate** — the step's findings go into the artifact store (merged,
   their citations checked) and the executor's messages are cleared;
4. **refine** — CONTINUE (re-plan only what is missing) or FINISH;
5. **synthesize** — the answer, every claim cited ``path:start-end``.

Everything here is pure data (pydantic + stdlib): the workflow sandbox imports it.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from durable_navigator.navcore.run.artifacts import ArtifactRef
from durable_navigator.navcore.run.budget import BudgetLedger, RunUsd, usd_to_micros
from durable_navigator.navcore.run.decision import TokenUsage
from durable_navigator.navcore.run.findings import FALLBACK_STEP, Finding, FindingsDoc, PlannedStep
from durable_navigator.navcore.navigator.guardrails import GuardrailState, RunProfile, SafetyConfig
from durable_navigator.navcore.model.model import ToolCallOut
from durable_navigator.navcore.model.pricing import ModelPricingRates
from durable_navigator.navcore.navigator.requests import ApprovalConfig, ModelCallConfig
from durable_navigator.navcore.navigator.state import (
    DecisionLog,
    ExecutionMode,
    MapState,
    RunStatus,
    Steering,
    StopReason,
)
from durable_navigator.navcore.run.subagents import AgentProfile, ChildRun
from durable_navigator.navcore.run.sources import SourcedRequest
from durable_navigator.navtypes.flightplan import FlightPlan

__all__ = [
    "FALLBACK_STEP",
    "PlannedStep",
    "ResearchStep",
    "Finding",
    "FindingsDoc",
    "FindingsState",
    "ExecutorState",
    "AnswerState",
    "Phase",
    "ResearchRequest",
    "ResearchState",
    "ResearchResult",
    "ResearchView",
    "DEFAULT_PROFILE",
    "AggregateInput",
    "AggregateOutput",
    "WriteAnswerInput",
    "WriteAnswerOutput",
    "initial_research_state",
]

#: the profile a run uses when none is given (mirrors ``researcher`` in agent_profiles.yaml)
DEFAULT_PROFILE = AgentProfile(name="researcher", kind="research", may_delegate=True,
                               description="plans research steps, runs them with the code tools, answers with citations")

Phase = Literal["plan", "execute", "refine", "synthesize", "done"]
StepStatus = Literal["pending", "running", "done", "rejected", "failed", "skipped"]
_Text = Annotated[str, Field(max_length=2000)]


class ResearchStep(BaseModel):
    """A plan step in the run's state."""

    model_config = ConfigDict(extra="forbid")

    index: int = Field(ge=0)
    round: int = Field(ge=0)
    description: Annotated[str, Field(max_length=1000)]
    profile: str | None = None
    status: StepStatus = "pending"
    #: executor turns it took
    turns: int = 0
    #: findings it added
    findings: int = 0
    verdict: str | None = None
    note: _Text | None = None


class FindingsState(BaseModel):
    """The run's merged findings, by reference, with what history needs to know of them."""

    model_config = ConfigDict(extra="forbid")

    ref: ArtifactRef | None = None
    count: int = 0
    #: cited files, first-seen order (capped)
    files: list[str] = []
    #: distinct cited lines over all findings
    lines: int = 0
    #: citations the aggregate step dropped (a path or line that does not exist)
    dropped: int = 0


class ExecutorState(BaseModel):
    """The executor's messages for the current step (cleared by the aggregate step)."""

    model_config = ConfigDict(extra="forbid")

    step_index: int = Field(ge=0)
    #: turns taken in this step
    turn: int = 0
    #: the stored request of the last turn (the conversation so far)
    request_ref: ArtifactRef | None = None
    #: the last turn's function calls and text, answered next turn by ``results``
    last_calls: list[ToolCallOut] = []
    last_text: _Text = ""
    #: the tool / subagent results of the last turn, as the prompt shows them
    results: list[str] = []
    #: findings of the step so far (a ``finish_step`` answer or a subagent's)
    findings_ref: ArtifactRef | None = None


class AnswerState(BaseModel):
    """The synthesized answer, by reference."""

    model_config = ConfigDict(extra="forbid")

    ref: ArtifactRef
    summary: _Text = ""
    citations: int = 0


class ResearchRequest(SourcedRequest):
    """Input of ``ResearchWorkflow`` (also its continue-as-new input)."""

    model_config = ConfigDict(extra="forbid")

    question: Annotated[str, Field(min_length=1, max_length=8000)]
    mode: ExecutionMode = ExecutionMode.AUTONOMOUS
    budget_usd: RunUsd = Decimal("0.50")
    model: Annotated[str, Field(min_length=1, max_length=200)] = "offline"
    out_dir: Annotated[str, Field(min_length=1, max_length=4096)] = "navigator-out"
    approval: ApprovalConfig = ApprovalConfig()
    model_call: ModelCallConfig = ModelCallConfig()
    #: the run's own profile (its caps, tools, instructions)
    profile: AgentProfile = DEFAULT_PROFILE
    #: profiles a step may be delegated to (by name)
    profiles: dict[str, AgentProfile] = {}
    #: loop / stall detection, goal anchoring, compression and the activity cap
    guardrails: RunProfile | None = None
    max_output_tokens: Annotated[int, Field(ge=64, le=65_536)] = 2048
    #: the coarse map the planner sees (tokens)
    map_tokens: Annotated[int, Field(ge=26, le=200_000)] = 4096
    #: how deep in a tree of subagents this run is (0: started by a user)
    depth: int = Field(0, ge=0, le=10)
    max_depth: int = Field(2, ge=0, le=10)
    #: "direct": skip the planner, the question is the one step (a delegated task)
    planning: Literal["auto", "direct"] = "auto"
    #: the smallest slice a subagent is started with (micro-USD)
    min_child_micros: int = Field(1000, ge=1)
    continue_as_new_events: Annotated[int, Field(ge=50, le=50_000)] = 8000
    #: seconds a render / code tool waits for the warm host before it goes to any worker (host gone)
    host_start_timeout_s: Annotated[float, Field(gt=0, le=3600)] = 30.0
    #: set only by the workflow itself when it continues as new
    carried_state: "ResearchState | None" = None

    def run_profile(self) -> RunProfile:
        """The guardrail profile in force; its iteration cap covers every executor turn of the caps."""
        caps = self.profile.caps
        turns = caps.max_rounds * caps.max_plan_steps * caps.max_executor_turns
        base = self.guardrails or RunProfile()
        safety = base.safety if self.guardrails is not None else SafetyConfig(
            max_iterations=min(turns, 10_000), max_activities=min(max(400, 6 * caps.max_calls), 100_000))
        return base.model_copy(update={"name": self.profile.name, "safety": safety})

    def may_delegate(self) -> bool:
        """The executor may start subagents (the profile allows it and the tree is not too deep)."""
        return self.profile.may_delegate and self.depth < self.max_depth and bool(self.profiles)


class ResearchState(BaseModel):
    """Everything a research run knows, in typed parts; small enough for history."""

    model_config = ConfigDict(extra="forbid")

    question: str
    repo_root: str
    model: str
    goal_ref: ArtifactRef | None = None
    model_rates: ModelPricingRates | None = None
    run: RunStatus = RunStatus()
    map: MapState
    ledger: BudgetLedger
    log: DecisionLog = DecisionLog()
    steering: Steering = Steering()
    guard: GuardrailState = GuardrailState()
    phase: Phase = "plan"
    #: the current round (0-based): one plan, its steps, one refinery verdict
    round: int = 0
    #: every step of every round, in order
    steps: list[ResearchStep] = []
    #: index (into ``steps``) of the step to run next
    next_step: int = 0
    executor: ExecutorState | None = None
    findings: FindingsState = FindingsState()
    #: the refinery's "what is missing" (drives the next round's plan)
    missing: str | None = None
    #: a user's rejection feedback, for the next plan
    feedback: str | None = None
    #: why planning fell back to the one fallback step, if it did
    plan_fallback: str | None = None
    children: list[ChildRun] = []
    #: model calls + tool calls + subagents so far (the global cap, third safety layer)
    calls_used: int = 0
    answer: AnswerState | None = None


ResearchRequest.model_rebuild()


class ResearchResult(BaseModel):
    """Output of ``ResearchWorkflow``: where the answer is, what it cost, whether it completed normally."""

    model_config = ConfigDict(extra="forbid")

    workflow_id: str
    stop_reason: StopReason
    stop_detail: str | None = None
    #: True when the refinery said FINISH (not a cap, the budget, a stop or a failure)
    completed_normally: bool
    rounds: int
    steps: int
    #: executor turns (model decisions)
    iterations: int
    decisions: int
    cost_micros: int
    cost_usd: Decimal
    max_usd: Decimal
    usage: TokenUsage
    model_attempts: int
    findings: int = 0
    citations: int = 0
    #: citations removed or clamped by the check against the repository
    citations_fixed: int = 0
    answer_path: str | None = None
    report_path: str | None = None
    answer_ref: ArtifactRef | None = None
    #: report.json in the artifact store (the CLI writes both files on the machine that asked)
    report_ref: ArtifactRef | None = None
    #: the merged findings (a ``FindingsDoc``): a parent merges a research child's into its own
    findings_ref: ArtifactRef | None = None
    #: the answer's first lines (the whole answer is at ``answer_path``)
    summary: str = ""
    children: list[ChildRun] = []
    continued_runs: int = 0

    @property
    def context_path(self) -> str | None:
        """The file a batch lists for this job: the answer."""
        return self.answer_path


class ResearchView(BaseModel):
    """Answer of the ``get_research`` query: plan, findings, children."""

    model_config = ConfigDict(extra="forbid")

    question: str
    phase: Phase
    round: int
    steps: list[ResearchStep]
    findings: FindingsState
    missing: str | None = None
    children: list[ChildRun] = []
    answer: AnswerState | None = None


class AggregateInput(BaseModel):
    """``research.aggregate``: merge a step's findings into the run's, checking their citations."""

    model_config = ConfigDict(extra="forbid")

    repo_root: str
    step_index: int = Field(ge=0)
    #: the run's findings so far (None: none yet) and the step's new ones
    current_ref: ArtifactRef | None = None
    step_ref: ArtifactRef | None = None
    #: "executor" or "subagent:<workflow id>" (recorded on each new finding)
    source: str = "executor"
    #: findings kept at most (the oldest are kept; a run rarely comes near)
    max_findings: int = Field(200, ge=1, le=5000)


class AggregateOutput(BaseModel):
    """The merged findings and what the step added."""

    model_config = ConfigDict(extra="forbid")

    findings: FindingsState
    added: int = 0
    #: one line per added finding (claim + citations), capped: the step's entry in the decision log
    lines: list[str] = []
    #: why citations were dropped (a path or a line that does not exist), capped
    dropped: list[str] = []
    #: the task queue only the answering host polls ("" if none): its index is warm (affinity)
    host_queue: str = ""


class WriteAnswerInput(BaseModel):
    """``research.write_answer``: check every citation against the repository, write answer.md + report.json."""

    model_config = ConfigDict(extra="forbid")

    out_dir: str
    workflow_id: str
    question: str
    repo_root: str
    #: the synthesized answer (None: the synthesizer did not answer; the findings are the answer)
    answer_ref: ArtifactRef | None = None
    findings_ref: ArtifactRef | None = None
    report_json: str
    #: why the answer came before the refinery's FINISH, if it did
    early: str | None = None


class WriteAnswerOutput(BaseModel):
    """Where the answer went and what the citation check did."""

    model_config = ConfigDict(extra="forbid")

    answer_path: str
    report_path: str
    answer_ref: ArtifactRef
    report_ref: ArtifactRef
    citations: int = 0
    #: citations removed or clamped
    fixed: int = 0
    summary: str = ""


def initial_research_state(req: ResearchRequest) -> ResearchState:
    """The state of a new research run (or the carried one after continue-as-new)."""
    if req.carried_state is not None:
        return req.carried_state
    return ResearchState(
        question=req.question,
        repo_root=req.repo_path,
        model=req.model,
        map=MapState(flight_plan=FlightPlan(goal=req.question, token_budget=req.map_tokens)),
        ledger=BudgetLedger(max_micros=usd_to_micros(req.budget_usd)),
        steering=Steering(mode=req.mode),
    )
