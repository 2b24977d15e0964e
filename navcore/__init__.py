"""navcore: the shared model package (pure, deterministic, pydantic + stdlib only).

Safe to import inside the Temporal workflow sandbox. The names below are loaded on first use
(PEP 562): importing one submodule (``navcore.endpoints`` for the CLI's configuration) must not
build every model of the package — a third of each CLI command's start-up before.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "ApprovalConfig",
    "ApproveInput",
    "ArtifactError",
    "ArtifactRef",
    "BudgetError",
    "BudgetLedger",
    "ConfigError",
    "ModelCallConfig",
    "DecisionLogEntry",
    "DecisionLogView",
    "EditFlightPlanInput",
    "ExecutionMode",
    "ExplorationRequest",
    "ExplorationResult",
    "FileSummary",
    "FlightPlan",
    "FlightPlanError",
    "FlightPlanUpdate",
    "Level",
    "MapMetadata",
    "MapView",
    "ModelDecision",
    "ModelError",
    "ModelTokenTotals",
    "NavigatorError",
    "NavigatorState",
    "PathEscapeError",
    "PendingTurn",
    "PromptInput",
    "PromptOutput",
    "RaiseBudgetInput",
    "RecentDecision",
    "RejectInput",
    "RenderMapInput",
    "RenderOutput",
    "RepoError",
    "Reservation",
    "ScanInput",
    "ScanOutput",
    "SetModeInput",
    "Status",
    "StopInput",
    "StopReason",
    "TokenUsage",
    "TurnReport",
    "WriteResultInput",
    "WriteResultOutput",
    "micros_to_usd",
    "usd_to_micros",
]

#: name -> the module that defines it
_HOME = {
    "ApprovalConfig": "durable_navigator.navcore.requests",
    "ApproveInput": "durable_navigator.navcore.messages",
    "ArtifactError": "durable_navigator.navtypes.errors",
    "ArtifactRef": "durable_navigator.navcore.artifacts",
    "BudgetError": "durable_navigator.navtypes.errors",
    "BudgetLedger": "durable_navigator.navcore.budget",
    "ConfigError": "durable_navigator.navtypes.errors",
    "ModelCallConfig": "durable_navigator.navcore.requests",
    "DecisionLogEntry": "durable_navigator.navcore.state",
    "DecisionLogView": "durable_navigator.navcore.report",
    "EditFlightPlanInput": "durable_navigator.navcore.messages",
    "ExecutionMode": "durable_navigator.navcore.state",
    "ExplorationRequest": "durable_navigator.navcore.requests",
    "ExplorationResult": "durable_navigator.navcore.requests",
    "FileSummary": "durable_navigator.navtypes.mapmeta",
    "FlightPlan": "durable_navigator.navtypes.flightplan",
    "FlightPlanError": "durable_navigator.navtypes.errors",
    "FlightPlanUpdate": "durable_navigator.navtypes.flightplan",
    "Level": "durable_navigator.navtypes.flightplan",
    "MapMetadata": "durable_navigator.navtypes.mapmeta",
    "MapView": "durable_navigator.navcore.activity_io",
    "ModelDecision": "durable_navigator.navcore.decision",
    "ModelError": "durable_navigator.navtypes.errors",
    "ModelTokenTotals": "durable_navigator.navcore.budget",
    "NavigatorError": "durable_navigator.navtypes.errors",
    "NavigatorState": "durable_navigator.navcore.state",
    "PathEscapeError": "durable_navigator.navtypes.errors",
    "PendingTurn": "durable_navigator.navcore.state",
    "PromptInput": "durable_navigator.navcore.activity_io",
    "PromptOutput": "durable_navigator.navcore.activity_io",
    "RaiseBudgetInput": "durable_navigator.navcore.messages",
    "RecentDecision": "durable_navigator.navcore.activity_io",
    "RejectInput": "durable_navigator.navcore.messages",
    "RenderMapInput": "durable_navigator.navcore.activity_io",
    "RenderOutput": "durable_navigator.navcore.activity_io",
    "RepoError": "durable_navigator.navtypes.errors",
    "Reservation": "durable_navigator.navcore.budget",
    "ScanInput": "durable_navigator.navcore.activity_io",
    "ScanOutput": "durable_navigator.navcore.activity_io",
    "SetModeInput": "durable_navigator.navcore.messages",
    "Status": "durable_navigator.navcore.state",
    "StopInput": "durable_navigator.navcore.messages",
    "StopReason": "durable_navigator.navcore.state",
    "TokenUsage": "durable_navigator.navcore.decision",
    "TurnReport": "durable_navigator.navcore.report",
    "WriteResultInput": "durable_navigator.navcore.activity_io",
    "WriteResultOutput": "durable_navigator.navcore.activity_io",
    "micros_to_usd": "durable_navigator.navcore.budget",
    "usd_to_micros": "durable_navigator.navcore.budget",
}


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
