"""Read run profiles (guardrails, caps, planning, compression) and agent profiles from YAML.

The profile itself is pure data (:class:`navcore.navigator.guardrails.RunProfile`) and
travels in the workflow input; this is the file-reading half, used by the CLI
before anything starts.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import yaml
from pydantic import ValidationError

from durable_navigator.navtypes.errors import ConfigError
from durable_navigator.navcore.navigator.guardrails import RunProfile
from durable_navigator.navcore.run.subagents import AgentProfile

__all__ = ["load_run_profile", "load_agent_profiles", "SHIPPED_AGENT_PROFILES"]


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
        except UnicodeDecodeError as exc:
            raise ConfigError(f"run profile {path} is not UTF-8 text (bad byte at offset {exc.start}); "
                              "pass a run-profile YAML file") from None
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


#: the shipped agent profiles (package data of navcore)
SHIPPED_AGENT_PROFILES = ("durable_navigator.navcore.run", "agent_profiles.yaml")


def _profiles_from_yaml(text: str, source: str) -> dict[str, AgentProfile]:
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{source}{where}: not valid YAML ({getattr(exc, 'problem', None) or 'syntax error'}); "
                          "fix the syntax") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: agent profiles must be a mapping of profile name → settings")
    out: dict[str, AgentProfile] = {}
    for name, fields in data.items():
        if not isinstance(fields, dict):
            raise ConfigError(f"{source}: profile {name!r} must be a mapping of settings")
        try:
            out[str(name)] = AgentProfile.model_validate({**fields, "name": str(name)})
        except ValidationError as exc:
            err = exc.errors()[0]
            key = ".".join(str(p) for p in err["loc"]) or "(root)"
            raise ConfigError(f"{source}: profile {name}: {key}: {err['msg']} ({exc.error_count()} error(s))") from exc
    return out


def load_agent_profiles(extra: Path | None = None) -> dict[str, AgentProfile]:
    """The shipped profiles (researcher, navigator, reviewer), then ``extra``'s added or overriding them."""
    package, name = SHIPPED_AGENT_PROFILES
    shipped = resources.files(package).joinpath(name).read_text(encoding="utf-8")
    profiles = _profiles_from_yaml(shipped, f"shipped {name}")
    if extra is not None:
        try:
            text = extra.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read agent profiles {extra}: {exc.strerror}; check the path") from exc
        except UnicodeDecodeError as exc:
            raise ConfigError(f"agent profiles {extra} is not UTF-8 text (bad byte at offset {exc.start}); "
                              "pass an agent-profiles YAML file") from None
        profiles.update(_profiles_from_yaml(text, str(extra)))
    return profiles
