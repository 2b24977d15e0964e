"""The navigator's two functions as Gemini function declarations, and their parsing.

``update_flight_plan(reasoning, updates)`` — ``updates`` mirrors
:class:`navcore.flightplan.FlightPlanUpdate` field for field: the schema is
*derived* from the pydantic model (``$ref`` inlined, ``X | None`` turned into
``nullable``), so the two cannot drift; descriptions tell the model what each
field does. ``finalize_context(summary)`` ends the exploration.

Parsing goes the other way: a function call's ``args`` are validated by the
same pydantic model, and every failure becomes a short text the corrective
re-ask quotes back to the model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from google.genai import types
from pydantic import ValidationError

from durable_navigator.navcore.flightplan import FlightPlanUpdate
from durable_navigator.navcore.tools import TOOL_NAMES, ToolCall

__all__ = [
    "UPDATE_FUNCTION",
    "FINALIZE_FUNCTION",
    "FUNCTION_NAMES",
    "ParsedCall",
    "navigator_tool",
    "forced_tool_config",
    "updates_schema",
    "parse_function_call",
]

UPDATE_FUNCTION = "update_flight_plan"
FINALIZE_FUNCTION = "finalize_context"
FUNCTION_NAMES = (UPDATE_FUNCTION, FINALIZE_FUNCTION)

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
}

#: JSON Schema keyword -> google.genai Schema field (the OpenAPI subset Gemini accepts)
_KEYWORDS = {
    "maxItems": "max_items",
    "minItems": "min_items",
    "maxLength": "max_length",
    "minLength": "min_length",
    "maximum": "maximum",
    "minimum": "minimum",
    "description": "description",
}


def _resolve(node: Mapping[str, Any], defs: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = node.get("$ref")
    if ref is None:
        return node
    return defs[ref.rsplit("/", 1)[-1]]


def _convert(node: Mapping[str, Any], defs: Mapping[str, Any]) -> dict[str, Any]:
    """One JSON-Schema node (pydantic output) as a ``types.Schema`` dict."""
    node = _resolve(node, defs)
    nullable = False
    if "anyOf" in node:
        options = [o for o in node["anyOf"] if o.get("type") != "null"]
        nullable = len(options) < len(node["anyOf"])
        if len(options) != 1:
            raise ValueError(f"cannot express anyOf with {len(options)} options for Gemini")
        node = _resolve(options[0], defs)
    out: dict[str, Any] = {"type": node["type"].upper()}
    for key, target in _KEYWORDS.items():
        if key in node:
            out[target] = node[key]
    if "exclusiveMinimum" in node:
        # Gemini has no exclusive bounds: integers step up by one, numbers keep
        # the bound and pydantic validation still refuses the boundary itself.
        bound = node["exclusiveMinimum"]
        out["minimum"] = bound + 1 if node["type"] == "integer" else bound
    if "enum" in node:
        if node["type"] == "integer":
            # Schema.enum is string-only; express an integer enum as a range.
            out["minimum"], out["maximum"] = min(node["enum"]), max(node["enum"])
        else:
            out["enum"] = [str(v) for v in node["enum"]]
    if nullable:
        out["nullable"] = True
    if node["type"] == "array":
        out["items"] = _convert(node["items"], defs)
    if node["type"] == "object":
        props = node.get("properties", {})
        out["properties"] = {name: _convert(sub, defs) for name, sub in props.items()}
        out["property_ordering"] = list(props)
        if node.get("required"):
            out["required"] = list(node["required"])
    return out


def updates_schema() -> types.Schema:
    """The ``updates`` parameter: FlightPlanUpdate's JSON schema in Gemini's dialect."""
    source = FlightPlanUpdate.model_json_schema()
    schema = _convert(source, source.get("$defs", {}))
    for name, prop in schema["properties"].items():
        prop["description"] = _FIELD_HELP[name]
    schema["description"] = "Changes to the flight plan; omit fields you do not change."
    return types.Schema.model_validate(schema)


def navigator_tool() -> types.Tool:
    """The tool holding both navigator functions."""
    update = types.FunctionDeclaration(
        name=UPDATE_FUNCTION,
        description="Change what the repository map shows next turn (verbosity, focus, "
        "budget), then see the re-rendered map.",
        parameters=types.Schema(
            type=types.Type.OBJECT,
            properties={
                "reasoning": types.Schema(
                    type=types.Type.STRING,
                    description="Why these changes move the map toward the goal.",
                ),
                "updates": updates_schema(),
            },
            required=["reasoning", "updates"],
            property_ordering=["reasoning", "updates"],
        ),
    )
    finalize = types.FunctionDeclaration(
        name=FINALIZE_FUNCTION,
        description="Stop exploring: the current map is the best context for the goal.",
        parameters=types.Schema(
            type=types.Type.OBJECT,
            properties={
                "summary": types.Schema(
                    type=types.Type.STRING,
                    description="What the map contains and how it answers the goal.",
                )
            },
            required=["summary"],
        ),
    )
    from durable_navigator.activities.tools import gemini_code_tool_declarations  # the code tools' own declarations

    return types.Tool(function_declarations=[update, finalize, *gemini_code_tool_declarations()])


def forced_tool_config() -> types.ToolConfig:
    """Mode ANY: the model must answer with exactly one of the two functions."""
    return types.ToolConfig(
        function_calling_config=types.FunctionCallingConfig(
            mode=types.FunctionCallingConfigMode.ANY,
            allowed_function_names=[*FUNCTION_NAMES, *TOOL_NAMES],
        )
    )


@dataclass(frozen=True)
class ParsedCall:
    """A usable function call, or why the model's answer was not one."""

    action: str | None = None
    reasoning: str = ""
    updates: FlightPlanUpdate | None = None
    summary: str | None = None
    error: str | None = None
    #: code-tool calls (action ``call_tools``); their arguments are checked by the tool activity
    tool_calls: tuple[ToolCall, ...] = ()


#: tool calls accepted in one answer (more is a corrective re-ask)
MAX_TOOL_CALLS = 8


def _tool_calls(calls: list[types.FunctionCall]) -> ParsedCall:
    if len(calls) > MAX_TOOL_CALLS:
        return ParsedCall(error=f"{len(calls)} tool calls; make at most {MAX_TOOL_CALLS} per turn")
    parsed = tuple(ToolCall(name=c.name, args=dict(c.args or {})) for c in calls)  # type: ignore[arg-type]
    return ParsedCall(action="call_tools", reasoning="tool calls: " + "; ".join(c.summary() for c in parsed),
                      tool_calls=parsed)


def _validation_text(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors(include_url=False)[:8]:
        loc = ".".join(str(p) for p in err["loc"]) or "updates"
        parts.append(f"updates.{loc}: {err['msg']}")
    return "; ".join(parts)


def parse_function_call(calls: list[types.FunctionCall]) -> ParsedCall:
    """Validate the model's function calls; exactly one navigator call is usable."""
    named = [c for c in calls if c.name in FUNCTION_NAMES]
    tools = [c for c in calls if c.name in TOOL_NAMES]
    if not calls:
        return ParsedCall(error="the answer contained no function call")
    if tools and named:
        return ParsedCall(error="call code tools or one navigator function in a turn, not both")
    if tools and len(tools) == len(calls):
        return _tool_calls(tools)
    if not named:
        names = ", ".join(sorted({str(c.name) for c in calls}))
        return ParsedCall(error=f"unknown function(s) {names}; only {', '.join((*FUNCTION_NAMES, *TOOL_NAMES))}")
    if len(named) > 1:
        return ParsedCall(error=f"{len(named)} function calls; call exactly one function")
    call = named[0]
    args = dict(call.args or {})
    if call.name == FINALIZE_FUNCTION:
        summary = args.get("summary")
        if not isinstance(summary, str) or not summary.strip():
            return ParsedCall(error="finalize_context needs a non-empty string 'summary'")
        return ParsedCall(action=FINALIZE_FUNCTION, summary=summary)
    reasoning = args.get("reasoning")
    if not isinstance(reasoning, str) or not reasoning.strip():
        return ParsedCall(error="update_flight_plan needs a non-empty string 'reasoning'")
    raw_updates = args.get("updates")
    if not isinstance(raw_updates, Mapping):
        return ParsedCall(error="update_flight_plan needs an object 'updates'")
    try:
        updates = FlightPlanUpdate.model_validate(dict(raw_updates))
    except ValidationError as exc:
        return ParsedCall(error=_validation_text(exc))
    return ParsedCall(action=UPDATE_FUNCTION, reasoning=reasoning, updates=updates)
