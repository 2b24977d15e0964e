"""What a caller sends to start an exploration, and what it gets back."""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from durable_navigator.navcore.navigator.activity_io import PackFigures
from durable_navigator.navcore.run.artifacts import ArtifactRef
from durable_navigator.navcore.run.budget import RunUsd
from durable_navigator.navcore.run.decision import TokenUsage
from durable_navigator.navtypes.flightplan import MAX_TOKEN_BUDGET, FlightPlan
from durable_navigator.navcore.navigator.guardrails import RunProfile, SafetyConfig
from durable_navigator.navtypes.mapmeta import MapMetadata
from durable_navigator.navcore.navigator.model_calls import StreamGuard
from durable_navigator.navcore.navigator.state import ExecutionMode, NavigatorState, StopReason, Verdict
from durable_navigator.navcore.run.sources import SourcedRequest

__all__ = ["ApprovalConfig", "ModelCallConfig", "ExplorationRequest", "ExplorationResult"]


class ApprovalConfig(BaseModel):
    """How long an interactive turn waits for a human, and what happens then."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    timeout_s: float = Field(3600.0, gt=0)
    #: verdict applied on timeout; "stop" ends the run with reason approval_timeout
    default_verdict: Verdict = "stop"


class ModelCallConfig(BaseModel):
    """How the workflow's model-call block runs every model call of a run.

    Attempts are the workflow's (the ``model.request`` activity runs once per
    attempt), so the budget and the stop flag are checked before each one;
    a transient failure waits ``initial_interval_s × backoff^(n-1)`` (capped),
    or the provider's Retry-After, before the next attempt.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: one attempt (a streaming call plus its corrective re-asks)
    start_to_close_s: float = Field(300.0, gt=0)
    #: a worker that stops heartbeating this long is considered dead (the attempt is lost)
    heartbeat_s: float = Field(30.0, gt=0)
    max_attempts: int = Field(4, ge=1, le=20)
    initial_interval_s: float = Field(2.0, gt=0)
    backoff: float = Field(2.0, ge=1.0)
    max_interval_s: float = Field(60.0, gt=0)
    #: corrective re-asks after an unusable answer (each priced and budget-checked)
    max_reasks: int = Field(1, ge=0, le=3)
    #: first-chunk and inter-chunk timeouts of streaming providers
    stream: StreamGuard = StreamGuard()

    def retry_delay_s(self, attempt: int) -> float:
        """The wait after failed attempt ``attempt`` (1-based) without a Retry-After."""
        return min(self.initial_interval_s * self.backoff ** (attempt - 1), self.max_interval_s)


class ExplorationRequest(SourcedRequest):
    """Input of ``NavigatorWorkflow`` (also its continue-as-new input)."""

    model_config = ConfigDict(extra="forbid")

    goal: Annotated[str, Field(min_length=1, max_length=8000)]
    mode: ExecutionMode = ExecutionMode.AUTONOMOUS
    budget_usd: RunUsd = Decimal("0.50")
    token_budget: Annotated[int, Field(gt=0, le=MAX_TOKEN_BUDGET)] = 4096
    model: Annotated[str, Field(min_length=1, max_length=200)] = "offline"
    max_iterations: Annotated[int, Field(ge=1, le=10_000)] = 12
    max_output_tokens: Annotated[int, Field(ge=64, le=65_536)] = 2048
    out_dir: Annotated[str, Field(min_length=1, max_length=4096)] = "navigator-out"
    approval: ApprovalConfig = ApprovalConfig()
    model_call: ModelCallConfig = ModelCallConfig()
    #: continue-as-new when history reaches this many events (or the server suggests it)
    continue_as_new_events: Annotated[int, Field(ge=50, le=50_000)] = 8000
    #: seconds a render / code tool waits for the warm host before it goes to any worker (host gone)
    host_start_timeout_s: Annotated[float, Field(gt=0, le=3600)] = 30.0
    #: decisions (most recent) quoted in each prompt
    prompt_recent_decisions: Annotated[int, Field(ge=0, le=50)] = 3
    initial_plan: FlightPlan | None = None
    #: guardrails (loop / stall detection, goal anchoring, safety caps); see navcore.navigator.guardrails
    profile: RunProfile | None = None
    #: planning phase: "auto" (analyze → [review] → plan, or DIRECT; the default), "direct"
    #: (one implicit stage), "off" (no stages: the open-ended loop). Recorded requests carry
    #: the field explicitly, so the default changing from "off" does not change their replay.
    planning: Literal["auto", "off", "direct"] = "auto"
    #: run the critic/pragmatist/detailer review when the analysis asks for it
    review: bool = False
    #: set only by the workflow itself when it continues as new
    carried_state: NavigatorState | None = None

    def models(self) -> list[str]:
        """Every model the run may call: its own, then those its profile's routing rules name."""
        routed = self.profile.routing.models() if self.profile is not None else []
        return list(dict.fromkeys([self.model, *routed]))

    def first_plan(self) -> FlightPlan:
        """The plan of iteration 0: the given one, or a coarse default for the goal."""
        if self.initial_plan is not None:
            return self.initial_plan
        return FlightPlan(token_budget=self.token_budget, goal=self.goal)

    def run_profile(self) -> RunProfile:
        """The guardrail profile in force.

        With a profile, ``max_iterations`` and the profile's own cap both apply
        (the lower wins). Without one, the request's ``max_iterations`` is the
        cap and the activity cap leaves room for ~10 activities per iteration.
        """
        if self.profile is not None:
            safety = self.profile.safety
            return self.profile.model_copy(update={"safety": safety.model_copy(
                update={"max_iterations": min(safety.max_iterations, self.max_iterations)})})
        default = SafetyConfig()
        return RunProfile(safety=SafetyConfig(
            max_iterations=self.max_iterations,
            max_stage_iterations=default.max_stage_iterations,
            max_activities=min(max(default.max_activities, 10 * self.max_iterations), 100_000),
        ))


class ExplorationResult(BaseModel):
    """Output of ``NavigatorWorkflow``: where the context pack is and what it cost."""

    model_config = ConfigDict(extra="forbid")

    workflow_id: str
    stop_reason: StopReason
    stop_detail: str | None = None
    iterations: int
    decisions: int
    cost_micros: int
    cost_usd: Decimal
    max_usd: Decimal
    usage: TokenUsage
    model_attempts: int
    map_metadata: MapMetadata | None = None
    context_path: str | None = None
    report_path: str | None = None
    context_ref: ArtifactRef | None = None
    #: report.json in the artifact store (the CLI writes both files on the machine that asked)
    report_ref: ArtifactRef | None = None
    #: context.md against the token budget (None: a result from before the pack had figures)
    pack: PackFigures | None = None
    #: the final map in the artifact store
    map_ref: ArtifactRef | None = None
    continued_runs: int = 0
