"""The words of an investigation plan: stages and criteria verdicts (shared by the state and the model calls).

:class:`CriterionStatus` is the one verdict type of every checker (:mod:`navcore.planning.criteria`), re-exported here.

Kept apart from :mod:`navcore.investigation.investigation` so :mod:`navcore.navigator.model_calls` can use them without an
import cycle (``requests`` → ``model_calls``). Pure data.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from durable_navigator.navcore.planning.criteria import CriterionStatus

__all__ = ["PlannedStage", "CriterionStatus", "StageChange", "stage_plan_problem"]

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
    #: the stage's own cap on implementation loops (None: the run's ``max_stage_loops``)
    max_loops: int | None = Field(None, ge=1, le=6)


class StageChange(BaseModel):
    """A reflection's change of one remaining stage (by its index in the plan)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    index: int = Field(ge=0)
    stage: PlannedStage


def stage_plan_problem(stages: Sequence[PlannedStage | dict[str, Any]], *, max_stages: int,
                       profiles: Iterable[str]) -> str | None:
    """Why a human's stage plan cannot run — one line naming the field (``stages.1.criteria: …``) — or None.

    Each stage is validated again (a client may have built it without validation), then checked
    against the run: at most ``max_stages`` stages, profiles the run knows, no blank title or
    criterion.
    """
    if not stages:
        return "stages: the plan needs at least one stage"
    if len(stages) > max_stages:
        return f"stages: {len(stages)} stages, more than the run's max_stages of {max_stages}"
    known = sorted(set(profiles))
    for i, raw in enumerate(stages):
        try:
            stage = PlannedStage.model_validate(raw.model_dump() if isinstance(raw, PlannedStage) else raw)
        except ValidationError as exc:
            err = exc.errors(include_input=False)[0]
            where = ".".join(str(part) for part in err.get("loc", ()))
            return f"stages.{i}{'.' + where if where else ''}: {str(err.get('msg', '')).removeprefix('Value error, ')}"
        if not stage.title.strip():
            return f"stages.{i}.title: is blank; give the stage a title"
        if not stage.task.strip():
            return f"stages.{i}.task: is blank; say what the stage's worker does"
        for j, criterion in enumerate(stage.criteria):
            if not criterion.strip():
                return f"stages.{i}.criteria.{j}: is blank; a criterion says what must be cited"
        if stage.profile is not None and stage.profile not in known:
            return f"stages.{i}.profile: no profile {stage.profile!r} in this run; use one of {', '.join(known)}"
    return None
