"""JSON schema → Gemini: the one converter of provider-neutral declarations.

Declarations are JSON-schema data (``navcore.model.model.ToolSpec``, derived from
pydantic models where they validate something); Gemini takes an OpenAPI
subset: ``$ref`` is inlined, ``X | None`` becomes ``nullable``, integer enums
become ranges, exclusive bounds become inclusive ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from google.genai import types

from durable_navigator.navcore.model.model import ToolSpec

__all__ = ["to_gemini_schema", "function_declarations"]

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
    if "$defs" in node:  # a nested pydantic schema brings its own definitions
        defs = {**defs, **node["$defs"]}
    description = node.get("description")  # an outer description wins over the referenced type's
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
    if description:
        out["description"] = description
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


def to_gemini_schema(schema: Mapping[str, Any]) -> types.Schema:
    """A JSON schema (with ``$defs``) as a Gemini ``types.Schema``."""
    return types.Schema.model_validate(_convert(schema, schema.get("$defs", {})))


def function_declarations(tools: list[ToolSpec]) -> list[types.FunctionDeclaration]:
    """The request's tool specs as Gemini function declarations."""
    return [
        types.FunctionDeclaration(name=t.name, description=t.description, parameters=to_gemini_schema(t.parameters))
        for t in tools
    ]
