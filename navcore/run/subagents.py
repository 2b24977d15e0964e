"""Subagents: profiles, the children a run started, their live events and their budget slices.

A research step may be delegated to a **subagent**: a child workflow started
from a **profile** (a research child, or a ``NavigatorWorkflow`` child for a
focused context pack). Each child runs on a **slice** of the parent's budget
reserved in the parent's ledger; when it ends, the parent books what it spent
and the rest of the slice flows back. A child reports its progress to the
parent while it runs (the ``child_event`` signal, sent by the Web UI
publisher block of every workflow started as a subagent), so the parent's
``status``, ``log`` and Web UI details show it live.

Pure data and arithmetic: safe in the workflow sandbox.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from durable_navigator.navcore.run.artifacts import ArtifactRef
from durable_navigator.navcore.run.budget import BudgetLedger
from durable_navigator.navcore.run.decision import TokenUsage
from durable_navigator.navcore.run.tools import TOOL_NAMES, ToolName

__all__ = [
    "ResearchCaps",
    "AgentProfile",
    "ProfileKind",
    "ChildRun",
    "ChildEvent",
    "SubagentOutcome",
    "SUBAGENT_MEMO_KEY",
    "SIGNAL_CHILD_EVENT",
    "child_slice_micros",
    "subagent_workflow_id",
    "completed_normally",
]

#: memo key a parent sets on a subagent child: the child's publisher reports to the parent
SUBAGENT_MEMO_KEY = "subagent"
#: the signal a subagent sends its parent on every change of status, step or cost
SIGNAL_CHILD_EVENT = "child_event"

ProfileKind = Literal["research", "navigate"]
_Name = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[a-z][a-z0-9_-]*$")]


class ResearchCaps(BaseModel):
    """The three safety layers of a research run, plus the size of a plan.

    1. ``max_rounds`` — outer iterations (plan → steps → refinery);
    2. ``max_executor_turns`` — ReAct turns of the executor per plan step;
    3. ``max_calls`` — a global cap on calls: model calls, tool calls and subagents together.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_rounds: int = Field(3, ge=1, le=20)
    max_plan_steps: int = Field(4, ge=1, le=12)
    max_executor_turns: int = Field(4, ge=1, le=30)
    max_calls: int = Field(80, ge=4, le=10_000)
    #: code-tool calls the executor may make in one turn (more are refused with a note)
    max_tool_calls_per_turn: int = Field(6, ge=1, le=8)


class AgentProfile(BaseModel):
    """What a (sub)agent is: its kind, model, instructions, tools, planning flags and caps.

    Shipped defaults (``researcher``, ``navigator``, ``reviewer``) live in
    ``navcore/run/agent_profiles.yaml``; a user file adds or overrides profiles
    (``activities/profiles.py`` reads and validates them).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: _Name
    kind: ProfileKind = "research"
    description: Annotated[str, Field(max_length=500)] = ""
    #: the model of a child started from this profile (None: the parent's)
    model: Annotated[str, Field(min_length=1, max_length=200)] | None = None
    #: extra instructions put in front of every prompt of a research child (data, not a role change)
    system_prompt: Annotated[str, Field(max_length=4000)] = ""
    #: the code tools its executor may call
    tools: list[ToolName] = list(TOOL_NAMES)
    #: the executor may call ``delegate`` / ``navigate`` (a child at ``max_depth`` never may)
    may_delegate: bool = False
    #: research: "auto" (the planner writes steps) or "direct" (the task itself is the one step);
    #: navigate: the navigator's planning phase ("auto", "direct", "off")
    planning: Literal["auto", "direct", "off"] = "auto"
    caps: ResearchCaps = ResearchCaps()
    #: navigate children: the map's token budget and the navigator's iteration cap
    token_budget: int = Field(8192, ge=26, le=2_000_000)
    max_iterations: int = Field(8, ge=1, le=1000)
    #: the share of the parent's remaining budget a child of this profile gets
    budget_share: Annotated[Decimal, Field(gt=0, le=1)] = Decimal("0.3")
    #: a child running longer than this is stopped by Temporal (completed_normally: false)
    timeout_s: float = Field(1800.0, gt=0, le=86_400)

    @model_validator(mode="after")
    def _planning_fits_kind(self) -> "AgentProfile":
        if self.kind == "research" and self.planning == "off":
            raise ValueError("a research profile plans 'auto' or 'direct' (the task is the one step)")
        return self


class ChildRun(BaseModel):
    """One subagent a run started: what the parent knows of it (live, from its events)."""

    model_config = ConfigDict(extra="forbid")

    workflow_id: str
    profile: str
    kind: ProfileKind
    task: Annotated[str, Field(max_length=300)]
    #: the plan step that delegated it (its index)
    step: int = Field(0, ge=0)
    status: str = "starting"
    #: the child's own iteration count, from its latest event
    iteration: int = 0
    cost_micros: int = 0
    slice_micros: int = 0
    completed_normally: bool | None = None
    stop_reason: str | None = None
    detail: Annotated[str, Field(max_length=500)] | None = None
    #: answer.md or context.md the child wrote
    result_path: str | None = None
    #: events received from it
    events: int = 0

    @property
    def running(self) -> bool:
        """True until the child's result (or failure) is in."""
        return self.completed_normally is None


class ChildEvent(BaseModel):
    """Signal ``child_event``: a subagent's progress, sent to its parent while it runs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    workflow_id: Annotated[str, Field(min_length=1, max_length=300)]
    status: Annotated[str, Field(max_length=40)]
    iteration: int = Field(0, ge=0)
    cost_micros: int = Field(0, ge=0)
    sender: Annotated[str, Field(min_length=1, max_length=200)] = "subagent"


class SubagentOutcome(BaseModel):
    """What a delegated step gets back: ``(result, completed_normally)`` and what it cost."""

    model_config = ConfigDict(extra="forbid")

    workflow_id: str
    profile: str
    kind: ProfileKind
    #: False when the child hit a limit (iterations, budget, loop), timed out, failed or was stopped
    completed_normally: bool
    stop_reason: str
    detail: str | None = None
    cost_micros: int = 0
    #: the child's answer or summary, shortened (the full text is in ``result_ref``)
    summary: Annotated[str, Field(max_length=4000)] = ""
    #: answer.md (research) or context.md (navigate) in the artifact store
    result_ref: ArtifactRef | None = None
    result_path: str | None = None
    #: a research child's findings (its citations), merged into the parent's
    findings_ref: ArtifactRef | None = None
    #: the tokens behind ``cost_micros`` (booked in the parent's ledger with it)
    usage: TokenUsage = TokenUsage()


def completed_normally(stop_reason: str) -> bool:
    """A child completed normally when it finished on its own terms (``finalized``)."""
    return stop_reason == "finalized"


def child_slice_micros(ledger: BudgetLedger, share: Decimal, floor_micros: int) -> int:
    """The slice a new child gets: ``share`` of what is left, or 0 when that is below ``floor_micros``."""
    remaining = max(ledger.remaining_micros, 0)
    slice_ = int((Decimal(remaining) * share).to_integral_value(rounding="ROUND_FLOOR"))
    return slice_ if slice_ >= floor_micros else 0


def subagent_workflow_id(parent_id: str, ordinal: int, profile: str) -> str:
    """A deterministic child id: a replay or a resumed parent meets the same child again."""
    return f"{parent_id}-sub{ordinal:02d}-{profile}"[:250]
