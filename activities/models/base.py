"""The one interface every model provider implements.

Providers run only on the worker, inside the ``navigator.decide`` activity (and
the planning / criteria / compression activities). Credentials are read from
the worker's environment when a provider is built, never from workflow input.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from durable_navigator.navcore.decision import ModelDecision
from durable_navigator.navcore.flightplan import FlightPlan
from durable_navigator.navcore.mapmeta import MapMetadata

__all__ = ["DecideCall", "ModelProvider"]


@dataclass(frozen=True)
class DecideCall:
    """Everything one navigator decision may look at.

    Prompt-driven providers (Gemini, scripted) use ``system_prompt`` and
    ``user_prompt``; the offline policy uses the structured fields and the
    repo-map ``engine`` (a ``repomap.RepoMap`` already opened by the worker).
    """

    model: str
    system_prompt: str
    user_prompt: str
    max_output_tokens: int
    goal: str
    flight_plan: FlightPlan
    iteration: int
    max_iterations: int
    repo_root: Path
    map_metadata: MapMetadata | None = None
    feedback: str | None = None
    #: (action, reasoning) of the most recent decisions, oldest first
    recent_decisions: tuple[tuple[str, str], ...] = ()
    engine: Any = None
    #: the caller runs ``call_tools`` decisions (the workflow does; the benchmark loop does not)
    tools_available: bool = False
    #: results of the previous turn's tool calls, as the prompt shows them (``### summary\nbody``)
    tool_results: tuple[str, ...] = ()
    #: called with a short progress note while the model streams
    heartbeat: Callable[[str], None] = field(default=lambda note: None)


@runtime_checkable
class ModelProvider(Protocol):
    """A source of navigator decisions."""

    def handles(self, model: str) -> bool:
        """True if this provider serves ``model`` (e.g. ``gemini-2.5-flash``)."""
        ...

    async def decide(self, call: DecideCall) -> ModelDecision:
        """Return one decision; raise ``ModelError`` for non-retryable failures."""
        ...
