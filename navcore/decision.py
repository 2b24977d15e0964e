"""What a model returns for one navigator turn, and what it cost."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from durable_navigator.navcore.flightplan import FlightPlanUpdate
from durable_navigator.navcore.tools import ToolCall

__all__ = ["TokenUsage", "ModelDecision", "DecisionAction"]

DecisionAction = Literal["update_flight_plan", "finalize_context", "call_tools", "invalid"]


class TokenUsage(BaseModel):
    """Token counts of one or more model calls (Gemini ``usage_metadata`` shape)."""

    model_config = ConfigDict(extra="forbid")

    input_tokens: int = Field(0, ge=0)  #: prompt tokens, cached ones included
    output_tokens: int = Field(0, ge=0)  #: candidates tokens
    thinking_tokens: int = Field(0, ge=0)  #: thoughts tokens
    cached_tokens: int = Field(0, ge=0)  #: part of input_tokens served from cache

    def __add__(self, other: "TokenUsage") -> "TokenUsage":
        return TokenUsage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            thinking_tokens=self.thinking_tokens + other.thinking_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
        )


class ModelDecision(BaseModel):
    """One navigator decision: update the flight plan, or finalize.

    ``invalid`` means the model failed to produce a usable function call even
    after the one corrective re-ask; the workflow logs it and goes on.
    ``usage`` covers every HTTP call made for this decision (re-asks included),
    so the ledger can be reconciled exactly.
    """

    model_config = ConfigDict(extra="forbid")

    action: DecisionAction
    reasoning: str = Field("", max_length=20_000)
    updates: FlightPlanUpdate | None = None
    summary: str | None = Field(None, max_length=20_000)
    model: str
    usage: TokenUsage = TokenUsage()
    #: provider calls made for this decision (1 + corrective re-asks)
    calls: int = Field(1, ge=0)
    error: str | None = None
    #: code-tool calls (action ``call_tools``): run before the next map update
    tool_calls: Annotated[list[ToolCall], Field(max_length=8)] = []
