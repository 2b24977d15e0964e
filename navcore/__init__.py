"""navcore: the shared model package (pure, deterministic, pydantic + stdlib only).

Safe to import inside the Temporal workflow sandbox.
"""

from navcore.activity_io import (
    AttemptUsage,
    DecideInput,
    DecideOutput,
    MapView,
    PromptBundle,
    PromptInput,
    PromptOutput,
    RecentDecision,
    RenderInput,
    RenderOutput,
    ScanInput,
    ScanOutput,
    WriteResultInput,
    WriteResultOutput,
)
from navcore.artifacts import ArtifactRef
from navcore.budget import BudgetLedger, ModelTokenTotals, Reservation, micros_to_usd, usd_to_micros
from navcore.decision import ModelDecision, TokenUsage
from navcore.errors import (
    ArtifactError,
    BudgetError,
    ConfigError,
    FlightPlanError,
    ModelError,
    NavigatorError,
    PathEscapeError,
    RepoError,
)
from navcore.flightplan import FlightPlan, FlightPlanUpdate, Level
from navcore.mapmeta import FileSummary, MapMetadata
from navcore.messages import (
    ApproveInput,
    EditFlightPlanInput,
    RaiseBudgetInput,
    RejectInput,
    SetModeInput,
    StopInput,
)
from navcore.report import DecisionLogView, TurnReport
from navcore.requests import ApprovalConfig, DecideRetryConfig, ExplorationRequest, ExplorationResult
from navcore.state import (
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
    "AttemptUsage",
    "BudgetError",
    "BudgetLedger",
    "ConfigError",
    "DecideInput",
    "DecideOutput",
    "DecideRetryConfig",
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
    "PromptBundle",
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
    "RenderInput",
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
