"""navcore: the shared model package (pure, deterministic, pydantic + stdlib only).

Safe to import inside the Temporal workflow sandbox.
"""

from durable_navigator.navcore.activity_io import (
    MapView,
    PromptInput,
    PromptOutput,
    RecentDecision,
    RenderMapInput,
    RenderOutput,
    ScanInput,
    ScanOutput,
    WriteResultInput,
    WriteResultOutput,
)
from durable_navigator.navcore.artifacts import ArtifactRef
from durable_navigator.navcore.budget import BudgetLedger, ModelTokenTotals, Reservation, micros_to_usd, usd_to_micros
from durable_navigator.navcore.decision import ModelDecision, TokenUsage
from durable_navigator.navtypes.errors import (
    ArtifactError,
    BudgetError,
    ConfigError,
    FlightPlanError,
    ModelError,
    NavigatorError,
    PathEscapeError,
    RepoError,
)
from durable_navigator.navtypes.flightplan import FlightPlan, FlightPlanUpdate, Level
from durable_navigator.navtypes.mapmeta import FileSummary, MapMetadata
from durable_navigator.navcore.messages import (
    ApproveInput,
    EditFlightPlanInput,
    RaiseBudgetInput,
    RejectInput,
    SetModeInput,
    StopInput,
)
from durable_navigator.navcore.report import DecisionLogView, TurnReport
from durable_navigator.navcore.requests import ApprovalConfig, ModelCallConfig, ExplorationRequest, ExplorationResult
from durable_navigator.navcore.state import (
    DecisionLogEntry,
    ExecutionMode,
    NavigatorState,
    PendingTurn,
    Status,
    StopReason,
)

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
