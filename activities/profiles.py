"""Read a run profile (guardrails, caps, planning, compression, stream guard) from YAML.

The profile itself is pure data (:class:`navcore.guardrails.RunProfile`) and
travels in the workflow input; this is the file-reading half, used by the CLI
before anything starts.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import ValidationError

from durable_navigator.navtypes.errors import ConfigError
from durable_navigator.navcore.guardrails import RunProfile

__all__ = ["load_run_profile"]


def load_run_profile(path_or_text: str | Path) -> RunProfile:
    """A :class:`RunProfile` from a YAML file or text; ``ConfigError`` naming the bad key."""
    text = str(path_or_text)
    source = "profile"
    if isinstance(path_or_text, Path) or ("\n" not in text and text.endswith((".yaml", ".yml", ".json"))):
        path = Path(text)
        try:
            text, source = path.read_text(encoding="utf-8"), str(path)
        except OSError as exc:
            raise ConfigError(f"cannot read run profile {path}: {exc.strerror}; check the path") from exc
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "syntax error"
        raise ConfigError(f"{source}{where}: not valid YAML ({problem}); fix the syntax") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: a run profile must be a mapping of settings")
    try:
        return RunProfile.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"]) or "(root)"
        raise ConfigError(f"{source}: {key}: {err['msg']} ({exc.error_count()} error(s) in total)") from exc
