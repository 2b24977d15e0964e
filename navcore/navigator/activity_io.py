"""Inputs and outputs of the navigator activities (small: artifacts by reference)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from durable_navigator.navcore.run.artifacts import ArtifactRef
from durable_navigator.navtypes.flightplan import FlightPlan, FlightPlanUpdate
from durable_navigator.navtypes.mapmeta import MapMetadata
from durable_navigator.navcore.model.pricing import ModelPricingRates
from durable_navigator.navcore.navigator.state import ExecutionMode

__all__ = [
    "ScanInput",
    "ScanOutput",
    "IndexProgress",
    "RenderMapInput",
    "RenderOutput",
    "MapView",
    "RecentDecision",
    "PromptInput",
    "PromptOutput",
    "DecideContext",
    "WriteResultInput",
    "WriteResultOutput",
    "PackFigures",
]


class _IO(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RenderMapInput(_IO):
    """Render the map of ``repo_root`` under a flight plan.

    Either a whole ``flight_plan``, or ``base_view_ref`` (the stored view of
    the current map) + ``update``: the activity applies the update to the
    stored plan (the same pure ``FlightPlan.apply`` the workflow runs), so a
    large plan or a long goal does not travel through history every turn.
    """

    repo_root: str
    flight_plan: FlightPlan | None = None
    base_view_ref: ArtifactRef | None = None
    update: FlightPlanUpdate | None = None
    step: int = 0

    @model_validator(mode="after")
    def _one_plan(self) -> "RenderMapInput":
        by_update = self.base_view_ref is not None and self.update is not None
        if (self.flight_plan is not None) == by_update:
            raise ValueError("give either flight_plan, or base_view_ref and update")
        return self


class MapView(_IO):
    """Stored next to a map (one artifact, one reference in history)."""

    #: the full metadata (all top files, timings)
    metadata: MapMetadata
    #: the flight plan the map was rendered under
    plan: FlightPlan


class RenderOutput(_IO):
    """A rendered map by reference, with trimmed metadata for history."""

    map_ref: ArtifactRef
    #: a :class:`MapView` as JSON
    view_ref: ArtifactRef
    #: metadata with top_files trimmed (see ActivityLimits.history_top_files)
    metadata: MapMetadata
    #: the task queue only the rendering host polls ("" if none): its index is warm (affinity)
    host_queue: str = ""


class ScanInput(_IO):
    """Open (index) the repository and render the first coarse map."""

    repo_root: str
    flight_plan: FlightPlan
    model: str
    #: the user's goal, stored once so prompts can refer to it by reference
    goal: str | None = None
    #: other models the run may call (its routing rules'): checked and priced now, before any spend
    other_models: list[str] = []


class IndexProgress(_IO):
    """The scan activity's heartbeat details while it indexes (read by ``explore`` / ``status``)."""

    phase: str = "indexing"
    #: files (re)indexed so far, of ``total`` the cache lacked
    done: int = Field(0, ge=0)
    total: int = Field(0, ge=0)
    files_per_s: float | None = None


class ScanOutput(_IO):
    """The indexed repository and its first map."""

    repo_root: str  #: resolved absolute root
    index_version: str
    files_total: int
    render: RenderOutput
    #: the stored goal text (when ScanInput.goal was given)
    goal_ref: ArtifactRef | None = None
    #: the run model's price (every call is priced by ``model.request`` at its own model's rates)
    rates: ModelPricingRates | None = None
    #: the price of the run's model and of every model in ``ScanInput.other_models``
    rates_by_model: dict[str, ModelPricingRates] = {}
    #: the task queue only the host that built the index polls ("" if none): the run's renders and
    #: code tools go there (``workflows/blocks/affinity.py``)
    host_queue: str = ""


class RecentDecision(_IO):
    """A past decision quoted in the prompt.

    The workflow sends only ``decision_ref`` (history stays small); the prompt
    activity fills ``reasoning`` and ``diff_lines`` from that artifact. Entries
    without a decision (a failed call) carry a short note as ``reasoning``.
    """

    step: int
    action: str
    reasoning: str = ""
    diff_lines: list[str] = []
    verdict: str | None = None
    decision_ref: ArtifactRef | None = None


class PromptInput(_IO):
    """Everything the prompt builder needs; the map itself comes by reference."""

    step: int
    #: the goal inline, or ``goal_ref`` (stored at scan; keeps long goals out of history)
    goal: str | None = None
    goal_ref: ArtifactRef | None = None
    model: str
    mode: ExecutionMode
    max_iterations: int
    max_output_tokens: int
    map_ref: ArtifactRef
    #: the :class:`MapView` of ``map_ref`` (its metadata and flight plan)
    view_ref: ArtifactRef
    spent_micros: int
    max_micros: int
    recent: list[RecentDecision] = []
    feedback: str | None = None
    #: guardrail notes; ``GOAL_SLOT`` in a note is replaced by the goal text
    #: (the workflow never copies the goal into history again)
    notes: list[str] = []
    #: cap on quoted decision-log summaries (the run profile's compression cap)
    summary_chars: int = Field(4000, ge=200, le=100_000)
    #: the current stage's objective and success criteria (planned runs)
    stage: list[str] = []
    #: results of the last decision's code-tool calls (capped, one block per call)
    tool_results: list[str] = []


class DecideContext(_IO):
    """The structured side of one prompt, stored as JSON next to it.

    Prompt-free providers (the offline policy) read these fields; keeping them
    in an artifact means they enter history once (prompt input), not twice.
    """

    goal: str
    flight_plan: FlightPlan
    recent: list[RecentDecision] = []
    feedback: str | None = None
    #: the tool results this prompt shows (capped lines), for prompt-free providers
    tool_results: list[str] = []


class PromptOutput(_IO):
    """The stored prompt, its exact token count and the cost estimate of sending it."""

    #: the stored prompt (system, user and the structured context for prompt-free providers) as JSON
    prompt_ref: ArtifactRef
    prompt_tokens: int = Field(ge=0)
    #: input at the model's input rate + max_output_tokens at its output rate
    estimate_micros: int = Field(ge=0)


class WriteResultInput(_IO):
    """Write context.md + report.json for a finished exploration."""

    out_dir: str
    workflow_id: str
    goal: str
    repo_root: str
    map_ref: ArtifactRef | None
    #: the report JSON (state summary) is built by the workflow, stored by the activity
    report_json: str
    summary: str | None = None
    #: the stage plan with each criterion's status (markdown), listed in context.md
    stage_plan: str | None = None
    #: the whole pack's budget (the request's); None: no limit beyond the map's own
    token_budget: int | None = None
    #: the stored ``MapView`` of ``map_ref``: its plan re-renders the map smaller to fit the budget
    view_ref: ArtifactRef | None = None


class PackFigures(_IO):
    """What ``context.md`` holds against the user's token budget (cl100k_base, the map's counter)."""

    #: the budget the whole pack (frame + map) is held to: the request's ``token_budget``
    token_budget: int
    #: tokens of the whole context.md
    tokens: int
    #: tokens of the map inside it, and the budget that map was rendered at
    map_tokens: int
    map_token_budget: int
    #: the run's own map was rendered again smaller (or left out) to make room for the frame
    map_rerendered: bool = False
    map_left_out: bool = False
    #: frame parts shortened or dropped (in full in report.json)
    shortened: list[str] = []

    @property
    def trimmed(self) -> bool:
        """Something of the run's result is only in report.json."""
        return self.map_rerendered or self.map_left_out or bool(self.shortened)


class WriteResultOutput(_IO):
    """Where the results were written."""

    context_path: str
    report_path: str
    context_ref: ArtifactRef
    report_ref: ArtifactRef
    pack: PackFigures | None = None
