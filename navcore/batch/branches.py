"""Branch-and-compare for explorations: ``navigator explore --branches N`` (pure data).

``ExploreBranchesWorkflow`` forks N ``NavigatorWorkflow`` children, each with another
strategy (planning ``auto`` / ``direct`` / ``off``), on equal slices of the budget;
each context pack is scored by the goal identifiers it covers per thousand tokens
(``investigate.score_branches``), and the best one is kept (its ``context.md`` is
the result).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from durable_navigator.navcore.run.budget import BudgetLedger
from durable_navigator.navcore.run.decision import TokenUsage
from durable_navigator.navcore.investigation.investigation import BranchScore
from durable_navigator.navcore.navigator.requests import ExplorationRequest
from durable_navigator.navcore.navigator.state import RunStatus, Steering, StopReason
from durable_navigator.navcore.run.subagents import ChildRun

__all__ = ["EXPLORE_STRATEGIES", "BranchExploreRequest", "BranchExploreState", "BranchExploreResult"]

#: the i-th branch explores with the i-th planning mode (cycled)
EXPLORE_STRATEGIES: tuple[Literal["auto", "direct", "off"], ...] = ("auto", "off", "direct")


class BranchExploreRequest(BaseModel):
    """Input of ``ExploreBranchesWorkflow``: one exploration, forked ``branches`` ways."""

    model_config = ConfigDict(extra="forbid")

    exploration: ExplorationRequest
    branches: int = Field(2, ge=2, le=4)


class BranchExploreState(BaseModel):
    """What the branches run knows (small)."""

    model_config = ConfigDict(extra="forbid")

    run: RunStatus = RunStatus()
    ledger: BudgetLedger
    steering: Steering = Steering()
    children: list[ChildRun] = []
    scores: list[BranchScore] = []


class BranchExploreResult(BaseModel):
    """The kept branch's context pack and every branch's score."""

    model_config = ConfigDict(extra="forbid")

    workflow_id: str
    stop_reason: StopReason
    stop_detail: str | None = None
    completed_normally: bool
    kept: str | None = None
    context_path: Annotated[str | None, Field(max_length=4096)] = None
    scores: list[BranchScore] = []
    children: list[ChildRun] = []
    cost_micros: int = 0
    cost_usd: Decimal = Decimal(0)
    max_usd: Decimal = Decimal(0)
    usage: TokenUsage = TokenUsage()

    @property
    def report_path(self) -> str | None:
        """No report of its own: the kept pack's context.md."""
        return self.context_path
