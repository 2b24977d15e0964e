"""Staged investigations: the request, the typed state and the result of ``InvestigationWorkflow``.

An investigation is a long, staged piece of work over one repository:

1. **planning loop** — a plan maker writes stages with success criteria, a
   plan reviewer critiques them, a confirmation says ``{"exit": true|false,
   "reason"}``; up to ``max_plan_rounds`` rounds (a rejected round re-plans
   with the critique, the last round's plan is kept whatever it says); the
   plan is parsed into typed :class:`PlannedStage`; in interactive mode a
   human approves or rejects (with feedback) the plan;
2. **per stage** — a worker subagent (a research child, on a slice of the
   budget) carries the stage out; a reviewer critiques its findings and a
   confirmation decides to loop (another child, with the critique) or move
   on, at most ``max_stage_loops`` times; the stage's record is compressed;
   a criteria checker marks each success criterion met or not with
   evidence (citations, then checked against the repository: a criterion is
   met only with at least one citation that exists); a reflector may drop,
   change or add remaining stages and says why;
3. **summary** — ``report.md`` and ``report.json``.

Pure data (pydantic + stdlib): the workflow sandbox imports it.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from durable_navigator.navcore.run.artifacts import ArtifactRef
from durable_navigator.navcore.run.budget import BudgetLedger, RunUsd, usd_to_micros
from durable_navigator.navcore.run.decision import TokenUsage
from durable_navigator.navcore.navigator.requests import ApprovalConfig, ModelCallConfig
from durable_navigator.navcore.navigator.state import DecisionLog, ExecutionMode, RunStatus, Steering, StopReason
from durable_navigator.navcore.planning.investigation_plan import CriterionStatus, PlannedStage
from durable_navigator.navcore.run.subagents import AgentProfile, ChildRun, ResearchCaps
from durable_navigator.navcore.run.sources import SourcedRequest

__all__ = [
    "WORKER_PROFILE",
    "PlannedStage",
    "CriterionStatus",
    "BranchScore",
    "StageRecord",
    "PlanRound",
    "InvestigationPhase",
    "InvestigationRequest",
    "InvestigationState",
    "InvestigationResult",
    "EvidenceInput",
    "EvidenceOutput",
    "WriteReportInput",
    "WriteReportOutput",
    "ScoreInput",
    "ScoreOutput",
    "initial_investigation_state",
    "stage_share",
]

#: the default stage worker: a research child that plans its own steps, answers with citations
WORKER_PROFILE = AgentProfile(
    name="stage-worker", kind="research", description="carries out one investigation stage with the code tools",
    caps=ResearchCaps(max_rounds=2, max_plan_steps=3, max_executor_turns=4, max_calls=60),
    budget_share=Decimal("0.5"),
)

_Line = Annotated[str, Field(max_length=1000)]
_Text = Annotated[str, Field(max_length=4000)]
StageStatus = Literal["pending", "running", "done", "dropped", "failed", "skipped", "stopped"]
InvestigationPhase = Literal["plan", "stages", "summary", "done"]


class BranchScore(BaseModel):
    """One alternative of a branch-and-compare stage."""

    model_config = ConfigDict(extra="forbid")

    workflow_id: str
    strategy: _Line
    covered: int = 0
    cost_micros: int = 0
    tokens: int = 0
    score: float = 0.0
    kept: bool = False


class StageRecord(BaseModel):
    """A stage in the run's state: the plan's words, what its children did, the verdicts."""

    model_config = ConfigDict(extra="forbid")

    index: int = Field(ge=0)
    title: str
    task: _Text
    criteria: list[str]
    profile: str | None = None
    branches: int = 1
    #: the stage's own loop cap (None: the run's ``max_stage_loops``)
    max_loops: int | None = None
    status: StageStatus = "pending"
    #: implementation loops run (worker child + review)
    loops: int = 0
    children: list[str] = []
    #: what the stage's children spent (the stage's own model calls are in ``calls_micros``)
    cost_micros: int = 0
    calls_micros: int = 0
    #: the kept child's findings and answer (by reference) and its answer file
    findings_ref: ArtifactRef | None = None
    answer_path: str | None = None
    findings: int = 0
    summary: _Text = ""
    #: the reviewer's critiques, oldest first, and the confirmations' reasons
    reviews: list[_Line] = []
    #: the compressed record of the stage (what later stages and the report see; trimmed) and the whole
    #: record in the artifact store (None: the deterministic record, no model call)
    record: _Text = ""
    record_ref: ArtifactRef | None = None
    criteria_status: list[CriterionStatus] = []
    #: the reflection after this stage (why the remaining stages changed, or not)
    reflection: _Line = ""
    branch_scores: list[BranchScore] = []
    #: a worker child that did not complete normally (its stop reason)
    child_problem: _Line | None = None


class PlanRound(BaseModel):
    """One round of the planning loop."""

    model_config = ConfigDict(extra="forbid")

    round: int = Field(ge=0)
    stages: list[str] = []
    critique: _Line = ""
    exit: bool = False
    reason: _Line = ""


class InvestigationRequest(SourcedRequest):
    """Input of ``InvestigationWorkflow`` (also its continue-as-new input)."""

    model_config = ConfigDict(extra="forbid")

    goal: Annotated[str, Field(min_length=1, max_length=8000)]
    mode: ExecutionMode = ExecutionMode.AUTONOMOUS
    budget_usd: RunUsd = Decimal("1.00")
    model: Annotated[str, Field(min_length=1, max_length=200)] = "offline"
    out_dir: Annotated[str, Field(min_length=1, max_length=4096)] = "navigator-out"
    approval: ApprovalConfig = ApprovalConfig()
    model_call: ModelCallConfig = ModelCallConfig()
    #: the profile of each stage's worker child, and the profiles a stage may name
    worker: AgentProfile = WORKER_PROFILE
    profiles: dict[str, AgentProfile] = {}
    max_stages: int = Field(4, ge=1, le=12)
    max_plan_rounds: int = Field(3, ge=1, le=10)
    #: implementation loops per stage (worker + review), the per-stage cap
    max_stage_loops: int = Field(2, ge=1, le=6)
    #: branch-and-compare for every stage (a stage's own ``branches`` wins when larger)
    branches: int = Field(1, ge=1, le=4)
    #: the share of the budget left for stages that the workers get (the rest: the orchestrator's calls)
    worker_share: Annotated[Decimal, Field(gt=0, lt=1)] = Decimal("0.8")
    max_output_tokens: Annotated[int, Field(ge=64, le=65_536)] = 2048
    min_child_micros: int = Field(1000, ge=1)
    continue_as_new_events: Annotated[int, Field(ge=50, le=50_000)] = 8000
    #: seconds a render / code tool waits for the warm host before it goes to any worker (host gone)
    host_start_timeout_s: Annotated[float, Field(gt=0, le=3600)] = 30.0
    #: set only by the workflow itself when it continues as new
    carried_state: "InvestigationState | None" = None


class InvestigationState(BaseModel):
    """Everything an investigation knows; small enough for history (findings stay in the artifact store)."""

    model_config = ConfigDict(extra="forbid")

    goal: str
    repo_root: str
    model: str
    goal_ref: ArtifactRef | None = None
    run: RunStatus = RunStatus()
    ledger: BudgetLedger
    log: DecisionLog = DecisionLog()
    steering: Steering = Steering()
    phase: InvestigationPhase = "plan"
    plan_rounds: list[PlanRound] = []
    stages: list[StageRecord] = []
    #: index of the stage running or next
    current: int = 0
    children: list[ChildRun] = []
    #: model calls per task kind (the ``index`` scripts and deterministic models key by)
    calls: dict[str, int] = {}
    #: a user's feedback on a rejected plan (the next plan round reads it)
    feedback: str | None = None
    #: safety warnings (stalls, loops, caps), newest last
    warnings: list[_Line] = []


InvestigationRequest.model_rebuild()


class InvestigationResult(BaseModel):
    """Output of ``InvestigationWorkflow``."""

    model_config = ConfigDict(extra="forbid")

    workflow_id: str
    stop_reason: StopReason
    stop_detail: str | None = None
    completed_normally: bool
    plan_rounds: int
    stages: int
    stages_done: int
    criteria_met: int
    criteria_total: int
    #: criteria the checker could not check (never counted met)
    criteria_unchecked: int = 0
    children: list[ChildRun] = []
    cost_micros: int
    cost_usd: Decimal
    max_usd: Decimal
    usage: TokenUsage
    report_path: str | None = None
    report_json_path: str | None = None
    #: report.md and report.json in the artifact store: the CLI writes them on the machine that asked
    report_ref: ArtifactRef | None = None
    report_json_ref: ArtifactRef | None = None
    summary: str = ""
    continued_runs: int = 0
    #: the orchestrator's model calls and its decision-log entries
    iterations: int = 0
    decisions: int = 0

    @property
    def context_path(self) -> str | None:
        """The file a batch lists for this job: the report."""
        return self.report_path


class EvidenceInput(BaseModel):
    """``investigate.check_evidence``: which cited lines exist in the repository."""

    model_config = ConfigDict(extra="forbid")

    repo_root: str
    criteria: list[CriterionStatus]


class EvidenceOutput(BaseModel):
    """The criteria with their evidence checked (a criterion without existing evidence is not met)."""

    model_config = ConfigDict(extra="forbid")

    criteria: list[CriterionStatus]
    checked: int = 0
    dropped: int = 0
    #: the task queue only the answering host polls ("" if none): its index is warm (affinity)
    host_queue: str = ""


class WriteReportInput(BaseModel):
    """``investigate.write_report``: report.md (from the stages' findings) and report.json."""

    model_config = ConfigDict(extra="forbid")

    out_dir: str
    workflow_id: str
    repo_root: str
    #: the run's state as JSON (the report is built from it in the activity)
    state_json: str
    completed_normally: bool


class WriteReportOutput(BaseModel):
    """Where the report went."""

    model_config = ConfigDict(extra="forbid")

    report_path: str
    report_json_path: str
    report_ref: ArtifactRef
    #: report.json in the artifact store (the CLI that asked writes it from here)
    report_json_ref: ArtifactRef | None = None
    summary: str = ""


class ScoreInput(BaseModel):
    """``investigate.score_branches``: how many goal identifiers each branch's findings cover."""

    model_config = ConfigDict(extra="forbid")

    goal: str
    #: each branch's findings (None: it found nothing)
    findings: list[ArtifactRef | None] = []
    #: or each branch's context pack (a text artifact: context.md)
    packs: list[ArtifactRef | None] = []


class ScoreOutput(BaseModel):
    """Goal identifiers covered, per branch (same order as the input)."""

    model_config = ConfigDict(extra="forbid")

    covered: list[int]
    terms: int = 0
    #: approximate tokens of each pack (packs only; 4 characters a token)
    tokens: list[int] = []


def initial_investigation_state(req: InvestigationRequest) -> InvestigationState:
    """The state of a new investigation (or the carried one after continue-as-new)."""
    if req.carried_state is not None:
        return req.carried_state
    return InvestigationState(goal=req.goal, repo_root=req.repo_path, model=req.model,
                              ledger=BudgetLedger(max_micros=usd_to_micros(req.budget_usd)),
                              steering=Steering(mode=req.mode))


def stage_share(worker_share: Decimal, stages_left: int, loops_left: int, branches: int) -> Decimal:
    """The share of what is left that one worker child gets.

    The stage gets ``1 / stages_left`` of the budget left (times ``worker_share``,
    the rest kept for the orchestrator's own calls); within the stage, a loop
    gets ``1 / loops_left`` of that and a branch ``1 / branches`` of the loop's.
    Always in (0, 1]; the parent's hard cap covers every child whatever the share.
    """
    share = worker_share / Decimal(max(stages_left, 1)) / Decimal(max(loops_left, 1)) / Decimal(max(branches, 1))
    return max(min(share, Decimal(1)), Decimal("0.0001"))
