"""JSON schema → OpenAI-compatible function declarations (the one converter of this provider).

Declarations are JSON-schema data (``navcore.model.model.ToolSpec``, derived from
pydantic models where they validate something). The chat-completions API takes
JSON Schema as it is, but the servers behind a base URL differ: llama.cpp's
grammar compiler, Ollama and older vLLM resolve ``$ref`` poorly or not at all,
and pydantic's ``title`` keys only add prompt tokens. So every ``$ref`` is
inlined (definitions are acyclic here), ``$defs`` and ``title`` are dropped,
and the rest — ``anyOf`` with ``null``, bounds, enums, descriptions — is kept,
which every server we target accepts.

The JSON-output fallback (``tool_calling: json``) describes the same converted
schemas in the prompt: :func:`json_mode_instructions`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from durable_navigator.navcore.model.model import ToolSpec

__all__ = ["to_openai_parameters", "tool_declarations", "json_mode_instructions", "JSON_CALLS_KEY"]

#: the key of the JSON-output fallback's answer object: {"calls": [{"name": ..., "arguments": {...}}]}
JSON_CALLS_KEY = "calls"
_DROPPED = frozenset({"title", "$defs", "definitions"})
#: nesting deeper than this is a cyclic or absurd schema, not a tool declaration
_MAX_DEPTH = 32


def _convert(node: Any, defs: Mapping[str, Any], depth: int) -> Any:
    if depth > _MAX_DEPTH:
        raise ValueError("the tool schema nests deeper than 32 levels (a recursive $ref?); flatten it")
    if isinstance(node, list):
        return [_convert(item, defs, depth + 1) for item in node]
    if not isinstance(node, Mapping):
        return node
    if "$defs" in node:  # a nested pydantic schema brings its own definitions
        defs = {**defs, **node["$defs"]}
    ref = node.get("$ref")
    if isinstance(ref, str):
        target = defs.get(ref.rsplit("/", 1)[-1])
        if target is None:
            raise ValueError(f"the tool schema refers to {ref!r}, which it does not define")
        merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}  # an outer description wins
        return _convert(merged, defs, depth + 1)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROPPED:
            continue
        if key == "properties" and isinstance(value, Mapping):
            # property names are data, not keywords: never drop a property called "title"
            out[key] = {name: _convert(sub, defs, depth + 1) for name, sub in value.items()}
        else:
            out[key] = _convert(value, defs, depth + 1)
    return out


def to_openai_parameters(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON schema (with ``$defs``) as self-contained function parameters."""
    converted = _convert(schema, schema.get("$defs", {}), 0)
    if converted.get("type") != "object":
        raise ValueError("function parameters must be a JSON object schema ('type': 'object')")
    return converted


def tool_declarations(tools: list[ToolSpec]) -> list[dict[str, Any]]:
    """The request's tool specs as chat-completions ``tools``."""
    return [
        {"type": "function",
         "function": {"name": t.name, "description": t.description, "parameters": to_openai_parameters(t.parameters)}}
        for t in tools
    ]


def json_mode_instructions(tools: list[ToolSpec], required: bool) -> str:
    """The system-prompt section of the JSON-output fallback: the functions and the answer format."""
    lines = [
        "FUNCTIONS. This server cannot call functions itself, so you call them by answering with ONE JSON "
        "object and nothing else (no prose, no code fence):",
        f'{{"{JSON_CALLS_KEY}": [{{"name": "<function name>", "arguments": {{...}}}}]}}',
        "Each call's arguments must follow that function's JSON schema."
        + (" You must call a function." if required else " Answer in plain text if no function fits."),
        "The functions:",
    ]
    for t in tools:
        params = json.dumps(to_openai_parameters(t.parameters), separators=(",", ":"), sort_keys=True)
        lines.append(f"- {t.name}: {t.description}\n  parameters: {params}")
    return "\n".join(lines)
