"""A run's execution mode and status (plain enums, re-exported by :mod:`navcore.navigator.state`).

Kept apart from the pydantic state models so the CLI's command signatures
(``navigator mode``, ``navigator ls --status``) use them without importing navcore.
"""

from __future__ import annotations

from enum import Enum

__all__ = ["ExecutionMode", "Status"]


class ExecutionMode(str, Enum):
    """Whether a human approves each turn."""

    AUTONOMOUS = "autonomous"
    INTERACTIVE = "interactive"


class Status(str, Enum):
    """Where an exploration is; also the ``NavigatorStatus`` search attribute."""

    STARTING = "starting"
    SCANNING = "scanning"
    #: building the next model request (prompt, map excerpt)
    PREPARING = "preparing"
    #: a model call is in flight
    THINKING = "thinking"
    RENDERING = "rendering"
    AWAITING_APPROVAL = "awaiting_approval"
    AWAITING_BUDGET = "awaiting_budget"
    FINALIZING = "finalizing"
    COMPLETED = "completed"
    FAILED = "failed"
