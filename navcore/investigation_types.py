"""The words of an investigation plan: stages and criteria verdicts (shared by the state and the model calls).

Kept apart from :mod:`navcore.investigation` so :mod:`navcore.model_calls` can use them without an
import cycle (``requests`` → ``model_calls``). Pure data.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["PlannedStage", "CriterionStatus", "StageChange"]

_Line = Annotated[str, Field(max_length=1000)]


class PlannedStage(BaseModel):
    """One stage as the plan maker (or a reflection) writes it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    title: Annotated[str, Field(min_length=1, max_length=200)]
    task: Annotated[str, Field(min_length=1, max_length=2000)]
    criteria: list[_Line] = Field(min_length=1, max_length=8)
    #: the worker profile (None: the run's worker profile)
    profile: str | None = None
    #: branch-and-compare: alternative strategies run in parallel (1: none)
    branches: int = Field(1, ge=1, le=4)


class CriterionStatus(BaseModel):
    """One success criterion after the check: met only with evidence that exists in the repository."""

    model_config = ConfigDict(extra="forbid")

    criterion: _Line
    met: bool
    #: checked citations (``path:start-end``) that exist in the repository
    evidence: list[str] = []
    #: citations the checker gave that do not exist (dropped, with why)
    dropped: list[str] = []
    note: _Line = ""


class StageChange(BaseModel):
    """A reflection's change of one remaining stage (by its index in the plan)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    index: int = Field(ge=0)
    stage: PlannedStage
