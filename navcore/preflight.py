"""The model preflight: can the worker(s) on a task queue serve these models?

The CLI asks before it starts a run (``navigator explore`` / ``batch run``): a
tiny ``NavigatorPreflight`` workflow runs the ``navigator.check_model`` activity
on the run's task queue, so the answer comes from a worker that will serve the
run — its credentials, its pricing table, its files — not from the CLI's own
environment. Verdicts carry a one-line problem, never a credential.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "PREFLIGHT_WORKFLOW",
    "ACTIVITY_CHECK_MODEL",
    "ModelCheckInput",
    "ModelVerdict",
    "ModelCheckResult",
]

#: registered workflow type and activity name (public API: never renamed)
PREFLIGHT_WORKFLOW = "NavigatorPreflight"
ACTIVITY_CHECK_MODEL = "navigator.check_model"

ModelName = Annotated[str, Field(min_length=1, max_length=200)]


class ModelCheckInput(BaseModel):
    """The models a run (or every job of a batch) will use."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    models: list[ModelName] = Field(min_length=1, max_length=1000)


class ModelVerdict(BaseModel):
    """Whether the answering worker can serve one model, and if not, why (one line)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str
    ok: bool
    problem: str | None = None


class ModelCheckResult(BaseModel):
    """One verdict per requested model, in the requested order."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    verdicts: list[ModelVerdict]
    #: who answered (the worker's identity), shown when a model is refused
    worker: str = ""

    def problems(self) -> dict[str, str]:
        """``model -> problem`` of every model the worker cannot serve."""
        return {v.model: v.problem or "refused" for v in self.verdicts if not v.ok}
