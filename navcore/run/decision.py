"""What a model returns for one navigator turn, and what it cost."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from durable_navigator.navtypes.flightplan import FlightPlanUpdate
from durable_navigator.navcore.run.tools import TOOL_DECLARATIONS, TOOL_NAMES, ToolCall

__all__ = [
    "TokenUsage",
    "ModelDecision",
    "DecisionAction",
    "UPDATE_FUNCTION",
    "FINALIZE_FUNCTION",
    "FUNCTION_NAMES",
    "MAX_TOOL_CALLS",
    "navigator_function_declarations",
    "updates_json_schema",
    "decision_from_calls",
]

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


UPDATE_FUNCTION = "update_flight_plan"
FINALIZE_FUNCTION = "finalize_context"
FUNCTION_NAMES = (UPDATE_FUNCTION, FINALIZE_FUNCTION)
#: code-tool calls accepted in one answer (more is a corrective re-ask)
MAX_TOOL_CALLS = 8

_LEVELS = "0 hidden, 1 path only, 2 symbol outline, 3 outline + docstrings, 4 full source"

#: what the model is told about each ``updates`` field (keys = FlightPlanUpdate fields)
_FIELD_HELP: dict[str, str] = {
    "token_budget": "New token budget of the rendered map; omit to keep it.",
    "default_level": f"Level for files no rule matches; omit to keep it. Levels: {_LEVELS}.",
    "set_rules": "Verbosity rules glob -> level to add or change; the last matching rule wins. "
    f"Levels: {_LEVELS}.",
    "remove_rules": "Globs of existing rules to remove.",
    "add_focus_paths": "Paths or globs to rank higher (weight 0-100].",
    "remove_focus_paths": "Globs of focus paths to remove.",
    "add_focus_symbols": "Symbols to rank higher: 'path::Class.method' or a bare name; "
    "expand=true shows the symbol's full source inside an outline.",
    "remove_focus_symbols": "Focus symbols to remove.",
    "add_exclude": "Globs to hide entirely (beat every rule).",
    "remove_exclude": "Exclude globs to remove.",
    "goal": "A refined goal text for ranking; omit to keep it.",
    "pin": "Keys the user asked for (rule/exclude/focus globs, symbols) that later turns must keep; pin only "
    "what the user's feedback requests.",
}


def updates_json_schema() -> dict[str, Any]:
    """``FlightPlanUpdate``'s JSON schema with a description on every field.

    Derived from the pydantic model, so the declaration and the validation of
    the model's answer cannot drift; providers convert it to their dialect.
    """
    schema = FlightPlanUpdate.model_json_schema()
    for name, prop in schema.get("properties", {}).items():
        prop["description"] = _FIELD_HELP[name]
    schema["description"] = "Changes to the flight plan; omit fields you do not change."
    return schema


def navigator_function_declarations(tools_available: bool = True) -> list[dict[str, Any]]:
    """The navigator's functions (and the code tools) as provider-neutral JSON-schema declarations."""
    update = {
        "name": UPDATE_FUNCTION,
        "description": "Change what the repository map shows next turn (verbosity, focus, budget), "
        "then see the re-rendered map.",
        "parameters": {
            "type": "object",
            "properties": {
                "reasoning": {"type": "string", "description": "Why these changes move the map toward the goal."},
                "updates": updates_json_schema(),
            },
            "required": ["reasoning", "updates"],
        },
    }
    finalize = {
        "name": FINALIZE_FUNCTION,
        "description": "Stop exploring: the current map is the best context for the goal.",
        "parameters": {
            "type": "object",
            "properties": {
                "summary": {"type": "string", "description": "What the map contains and how it answers the goal."}
            },
            "required": ["summary"],
        },
    }
    return [update, finalize, *(dict(d) for d in TOOL_DECLARATIONS)] if tools_available else [update, finalize]


def _validation_text(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors(include_url=False)[:8]:
        loc = ".".join(str(p) for p in err["loc"]) or "updates"
        parts.append(f"updates.{loc}: {err['msg']}")
    return "; ".join(parts)


def decision_from_calls(
    calls: Sequence[tuple[str, Mapping[str, Any]]], model: str, text: str = ""
) -> ModelDecision | str:
    """The decision a model's function calls express, or why they are unusable (for the re-ask).

    Exactly one navigator function, or 1..``MAX_TOOL_CALLS`` code-tool calls
    (their reasoning is the answer's ``text`` when it has one). Usage is left
    at zero: the caller books it.
    """
    named = [(n, a) for n, a in calls if n in FUNCTION_NAMES]
    tools = [(n, a) for n, a in calls if n in TOOL_NAMES]
    if not calls:
        return "the answer contained no function call"
    if tools and named:
        return "call code tools or one navigator function in a turn, not both"
    if tools and len(tools) == len(calls):
        if len(tools) > MAX_TOOL_CALLS:
            return f"{len(tools)} tool calls; make at most {MAX_TOOL_CALLS} per turn"
        parsed = [ToolCall(name=n, args=dict(a or {})) for n, a in tools]  # type: ignore[arg-type]
        reasoning = text.strip() or "tool calls: " + "; ".join(c.summary() for c in parsed)
        return ModelDecision(action="call_tools", reasoning=_cap(reasoning), tool_calls=parsed, model=model)
    if not named:
        names = ", ".join(sorted({str(n) for n, _ in calls}))
        return f"unknown function(s) {names}; only {', '.join((*FUNCTION_NAMES, *TOOL_NAMES))}"
    if len(named) > 1:
        return f"{len(named)} function calls; call exactly one function"
    name, raw = named[0]
    args = dict(raw or {})
    if name == FINALIZE_FUNCTION:
        summary = args.get("summary")
        if not isinstance(summary, str) or not summary.strip():
            return "finalize_context needs a non-empty string 'summary'"
        return ModelDecision(action="finalize_context", summary=_cap(summary), reasoning=_cap(text.strip() or summary),
                             model=model)
    reasoning = args.get("reasoning")
    if not isinstance(reasoning, str) or not reasoning.strip():
        return "update_flight_plan needs a non-empty string 'reasoning'"
    raw_updates = args.get("updates")
    if not isinstance(raw_updates, Mapping):
        return "update_flight_plan needs an object 'updates'"
    try:
        updates = FlightPlanUpdate.model_validate(dict(raw_updates))
    except ValidationError as exc:
        return _validation_text(exc)
    return ModelDecision(action="update_flight_plan", reasoning=_cap(reasoning), updates=updates, model=model)


#: ModelDecision caps reasoning and summary at this many characters
_TEXT_CAP = 20_000
_TRUNCATED = " …[truncated]"


def _cap(text: str) -> str:
    return text if len(text) <= _TEXT_CAP else text[: _TEXT_CAP - len(_TRUNCATED)] + _TRUNCATED
