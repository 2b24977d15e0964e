"""Helpers shared by the deploy tests: the typer command tree and the workflow's search attributes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer.main
import yaml

from durable_navigator.cli.app import app
from durable_navigator.cli.config import ENV_VARS, SECRET_ENV_VARS

ROOT = Path(__file__).resolve().parents[2]
#: variables set for the runtime itself (platformdirs honours XDG), not navigator settings
RUNTIME_ENV = {"XDG_CACHE_HOME", "XDG_STATE_HOME"}
#: the object store's keys, read by boto3's own credential chain when ``artifacts.*_env`` names none
#: (``cli/stores.py``): credentials, so only ever passed through from the host or a Secret
STORE_KEY_ENV = {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}


def _subcommands(command: Any) -> list[Any]:
    """A group's commands through its public API (the root loads its command modules on demand)."""
    if not hasattr(command, "list_commands"):
        return []
    ctx = typer.Context(command)
    return [command.get_command(ctx, name) for name in command.list_commands(ctx)]


def _typer_envvars() -> set[str]:
    """Environment variables declared on any option of any navigator command."""
    names: set[str] = set()
    stack = [typer.main.get_command(app)]
    while stack:
        command = stack.pop()
        stack.extend(_subcommands(command))
        for param in command.params:
            envvar = getattr(param, "envvar", None)
            names.update([envvar] if isinstance(envvar, str) else envvar or [])
    return names


#: every variable some code path reads: config fields, credentials, typer options, runtime
KNOWN_ENV = set(ENV_VARS) | set(SECRET_ENV_VARS) | RUNTIME_ENV | STORE_KEY_ENV | _typer_envvars()

#: SearchAttributeKey value type → the name `temporal operator search-attribute create --type` takes
SA_TYPE_NAMES = {"KEYWORD": "Keyword", "DOUBLE": "Double", "INT": "Int", "TEXT": "Text", "BOOL": "Bool"}


def load_yaml_docs(path: Path) -> list[Any]:
    """Every document of a YAML file."""
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def check_navigator_argv(argv: list[str]) -> dict[str, str]:
    """Assert ``argv`` (after the ``navigator`` entry point) names a real command and options.

    Returns the options with values, e.g. ``{"--health-port": "8080"}``.
    """
    group = typer.main.get_command(app)
    name, *rest = argv
    command = group.get_command(typer.Context(group), name)  # type: ignore[attr-defined]
    assert command is not None, f"{name!r} is not a navigator command"
    options: dict[str, Any] = {}
    for param in command.params:
        for opt in param.opts:
            options[opt] = param
    values: dict[str, str] = {}
    i = 0
    while i < len(rest):
        token = rest[i]
        assert token.startswith("--"), f"unexpected argument {token!r} for {name}"
        assert token in options, f"{token} is not an option of `navigator {name}`"
        if options[token].is_flag:
            values[token] = "true"
            i += 1
        else:
            values[token] = rest[i + 1]
            i += 2
    return values


def workflow_search_attributes() -> dict[str, str]:
    """Name → type of the search attributes the workflow upserts."""
    from durable_navigator.workflows.navigator import NAVIGATOR_SEARCH_ATTRIBUTES

    return {
        key.name: SA_TYPE_NAMES[key.indexed_value_type.name.removeprefix("INDEXED_VALUE_TYPE_")]
        for key in NAVIGATOR_SEARCH_ATTRIBUTES
    }
