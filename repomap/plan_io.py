"""Flight plans as YAML (in and out) and the exported JSON Schema.

Errors name the key, the YAML line and what is allowed, in one line, e.g.
``flight plan key 'rules[1].level' (line 7): input should be 0, 1, 2, 3 or 4;
allowed: 0 hidden, 1 path, 2 outline, 3 docs, 4 full``. Levels may be written
as numbers or names (``outline``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from durable_navigator.navtypes.errors import FlightPlanError
from durable_navigator.navtypes.flightplan import FlightPlan, FocusPath, FocusSymbol, Level, VerbosityRule

__all__ = ["load_flight_plan", "dump_flight_plan", "flight_plan_json_schema"]

_LEVELS_HELP = "0 hidden, 1 path, 2 outline, 3 docs, 4 full (number or name)"
_MODELS: dict[str, type[BaseModel]] = {"rules": VerbosityRule, "focus_paths": FocusPath,
                                       "focus_symbols": FocusSymbol}
_MAX_INLINE_TEXT = 4096


def _read(path_or_text: str | Path) -> tuple[str, str]:
    """(text, source name): a Path or an existing file name is read, else it is YAML text."""
    if isinstance(path_or_text, Path) or (
            "\n" not in path_or_text and len(path_or_text) < _MAX_INLINE_TEXT
            and path_or_text.endswith((".yaml", ".yml", ".json"))):
        path = Path(path_or_text)
        try:
            return path.read_text(encoding="utf-8"), str(path)
        except (OSError, UnicodeDecodeError) as exc:
            raise FlightPlanError(f"cannot read flight plan {str(path)!r}: {exc.__class__.__name__}; "
                                  "pass an existing UTF-8 YAML file") from exc
    return str(path_or_text), "<text>"


def load_flight_plan(path_or_text: str | Path) -> FlightPlan:
    """Parse and validate a YAML flight plan; FlightPlanError names key, line and what is allowed."""
    text, source = _read(path_or_text)
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise FlightPlanError(f"invalid YAML in flight plan {source}{where}: {problem}; fix the YAML syntax") from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise FlightPlanError(f"flight plan {source} must be a YAML mapping of keys "
                              f"({', '.join(FlightPlan.model_fields)}), got {type(data).__name__}")
    data = _level_names(data)
    try:
        return FlightPlan.model_validate(data)
    except ValidationError as exc:
        raise FlightPlanError(_describe(exc, node, source)) from exc


def _level_value(v: Any) -> Any:
    if isinstance(v, str) and v.strip().upper() in Level.__members__:
        return int(Level[v.strip().upper()])
    aliases = {"DOCSTRINGS": Level.DOCS, "SOURCE": Level.FULL, "HIDE": Level.HIDDEN, "SIGNATURES": Level.OUTLINE}
    if isinstance(v, str) and v.strip().upper() in aliases:
        return int(aliases[v.strip().upper()])
    return v


def _level_names(data: dict[str, Any]) -> dict[str, Any]:
    data = dict(data)
    if "default_level" in data:
        data["default_level"] = _level_value(data["default_level"])
    if isinstance(data.get("rules"), list):
        data["rules"] = [{**r, "level": _level_value(r["level"])} if isinstance(r, dict) and "level" in r else r
                         for r in data["rules"]]
    return data


def _line_of(node: Any, loc: tuple[Any, ...]) -> int | None:
    """1-based YAML line of the value (or key) at ``loc``."""
    line = node.start_mark.line + 1 if node is not None else None
    for part in loc:
        if isinstance(node, yaml.MappingNode) and isinstance(part, str):
            match = next(((k, v) for k, v in node.value if getattr(k, "value", None) == part), None)
            if match is None:
                return line
            line, node = match[0].start_mark.line + 1, match[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            return line
    return line


def _allowed(err: dict[str, Any]) -> str:
    loc = err["loc"]
    if err["type"] == "extra_forbidden":
        model: type[BaseModel] = FlightPlan
        if len(loc) >= 3 and loc[0] in _MODELS:
            model = _MODELS[loc[0]]
        return "keys " + ", ".join(model.model_fields)
    if loc and loc[-1] in ("level", "default_level"):
        return _LEVELS_HELP
    if loc and loc[0] == "token_budget":
        return "an integer from 1 to 2000000"
    if loc and loc[-1] == "weight":
        return "a number > 0 and <= 100"
    return "see `repo-map schema`"


def _describe(exc: ValidationError, node: Any, source: str) -> str:
    parts = []
    for err in exc.errors()[:3]:
        loc = tuple(err["loc"])
        key = "".join(f"[{p}]" if isinstance(p, int) else (f".{p}" if i else str(p)) for i, p in enumerate(loc))
        line = _line_of(node, loc)
        where = f" (line {line})" if line else ""
        parts.append(f"key '{key or '<root>'}'{where}: {err['msg'].lower()}; allowed: {_allowed(err)}")
    more = f" (+{len(exc.errors()) - 3} more)" if len(exc.errors()) > 3 else ""
    return f"invalid flight plan {source}: " + " | ".join(parts) + more


def dump_flight_plan(plan: FlightPlan) -> str:
    """YAML text that :func:`load_flight_plan` reads back to an equal plan."""
    return yaml.safe_dump(plan.model_dump(mode="json"), sort_keys=False, allow_unicode=True)


def flight_plan_json_schema() -> dict[str, Any]:
    """JSON Schema of :class:`navtypes.flightplan.FlightPlan`."""
    return FlightPlan.model_json_schema()
