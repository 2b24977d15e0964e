"""Research findings and plan steps: what the planner writes and what the executor finds.

Kept apart from :mod:`navcore.research.research` (the workflow's request and state) so the model-call
results (:mod:`navcore.navigator.model_calls`) can name them without importing the workflow's input.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from durable_navigator.navcore.run.citations import Citation

__all__ = ["FALLBACK_STEP", "PlannedStep", "Finding", "FindingsDoc"]

#: the one step a failed planner call falls back to
FALLBACK_STEP = "search for relevant code related to the query"


class PlannedStep(BaseModel):
    """One step as the planner wrote it (optionally delegated to a profile)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    description: Annotated[str, Field(min_length=1, max_length=1000)]
    #: run the step as a subagent of this profile instead of the executor
    profile: Annotated[str, Field(max_length=64)] | None = None


class Finding(BaseModel):
    """One claim about the code with the lines that show it (stored in the artifact store)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    claim: Annotated[str, Field(min_length=1, max_length=2000)]
    citations: list[Citation] = Field(default_factory=list, max_length=20)
    #: the cited code, quoted (optional; a few lines)
    quote: Annotated[str, Field(max_length=4000)] = ""
    #: the plan step that found it
    step: int = Field(0, ge=0)
    #: "executor" or "subagent:<workflow id>"
    source: Annotated[str, Field(max_length=300)] = "executor"


class FindingsDoc(BaseModel):
    """The findings of a step or of the whole run (an artifact; JSON)."""

    model_config = ConfigDict(extra="forbid")

    findings: list[Finding] = []
