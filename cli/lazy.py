"""Commands loaded when they run: ``navigator --help`` imports no command module.

Why: the command modules import the Temporal client, pydantic models, the worker
and the engine — about a second of imports on a loaded 2-core machine — and
none of it is needed to list the commands. The root group knows each command's
name, module and one-line help (:class:`LazyCommand`); the module is imported
(and its typer app converted) only when that command is invoked or asks for
its own ``--help``. ``tests/cli/test_startup.py`` checks that every table entry
names a real command with the same one-line help, and ``bench/cli_startup.py``
measures the result against the interpreter's own start-up.

This module imports only the standard library and typer.
"""

from __future__ import annotations

import importlib
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import typer
import typer.main
from typer.core import TyperCommand, TyperGroup

__all__ = ["LazyCommand", "LazyGroup", "command_group"]


@dataclass(frozen=True)
class LazyCommand:
    """Where a command lives: ``getattr(import_module(module), app)`` is a ``typer.Typer``.

    ``group``: the whole typer app is the command (a group such as ``batch``);
    otherwise the command of the same name inside that app.
    """

    module: str
    app: str
    help: str
    group: bool = False


def command_group(**kwargs: Any) -> typer.Typer:
    """A ``typer.Typer`` with the CLI's help style: plain click formatting, defaults shown.

    Plain formatting (``rich_markup_mode=None``): help reads the same in a
    terminal, at 80 columns and piped, and costs no rich-markdown import.
    """
    kwargs.setdefault("rich_markup_mode", None)
    kwargs.setdefault("add_completion", False)
    kwargs.setdefault("pretty_exceptions_show_locals", False)
    return typer.Typer(**kwargs)


class LazyGroup(TyperGroup):
    """A typer group whose commands listed in :attr:`lazy_commands` are imported on first use."""

    #: command name -> where it lives; set by a subclass
    lazy_commands: ClassVar[Mapping[str, LazyCommand]] = {}

    def list_commands(self, ctx: typer.Context) -> list[str]:
        """The lazy commands in table order, then any registered eagerly."""
        eager = [name for name in super().list_commands(ctx) if name not in self.lazy_commands]
        return [*self.lazy_commands, *eager]

    def get_command(self, ctx: typer.Context, cmd_name: str) -> Any:
        """The command, importing its module the first time it is asked for."""
        loaded = self.commands.get(cmd_name)
        if loaded is not None:
            return loaded
        spec = self.lazy_commands.get(cmd_name)
        if spec is None:
            return None
        command = load_command(cmd_name, spec)
        self.commands[cmd_name] = command
        return command

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:
        """Parse as typer does, but build an option's coercion only when the option has a value."""
        for param in self.get_params(ctx):  # --help too: typer makes it a typed parameter
            _coerce_given_values_only(param)
        return super().parse_args(ctx, args)

    def format_commands(self, ctx: typer.Context, formatter: Any) -> None:
        """The command list of ``--help`` from the table: nothing is imported for it."""
        rows: list[tuple[str, Any]] = []
        for name in self.list_commands(ctx):
            command = self.commands.get(name)
            if command is None and name in self.lazy_commands:
                command = TyperCommand(name, help=self.lazy_commands[name].help, rich_markup_mode=None)
            if command is None or command.hidden:
                continue
            rows.append((name, command))
        if not rows:
            return
        limit = formatter.width - 6 - max(len(name) for name, _ in rows)
        with formatter.section("Commands"):
            formatter.write_dl([(name, command.get_short_help_str(limit)) for name, command in rows])


def load_command(name: str, spec: LazyCommand) -> Any:
    """Import ``spec.module`` and turn its typer app into the (click) command ``name``."""
    module = importlib.import_module(spec.module)
    converted = typer.main.get_command(getattr(module, spec.app))
    _defer_coercions(converted)
    if spec.group:
        converted.name = name
        return converted
    if isinstance(converted, TyperGroup):
        command = converted.commands.get(name)
        if command is None:
            raise LookupError(f"{spec.module}.{spec.app} has no command {name!r}")
        return command
    if converted.name != name:
        raise LookupError(f"{spec.module}.{spec.app} is the command {converted.name!r}, not {name!r}")
    return converted


_BOOLISH = frozenset({bool, type(None)})


class _GivenValuesOnly:
    """typer's runtime coercion of one parameter, built the first time a value needs it.

    typer (0.2x) builds a pydantic ``TypeAdapter`` for every parameter of a group
    each time the group runs, even for an option left unset, whose value (None)
    it returns unchanged (and for ``--help``, a bool) -- so ``navigator explore --help`` imported pydantic for
    the root's ``--config`` / ``--log-json`` / ``--log-level`` (~0.07 CPU-s of
    every sub-command). Unset options now cost nothing; a given one is coerced by
    typer's own coercion, built on first use, exactly as before.
    """

    def __init__(self, descriptor: Any, build: Any) -> None:
        self._descriptor = descriptor
        self._build = build
        self._real: Any = None

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        if not (param.multiple or param.nargs == -1):
            if value is None:
                return None  # what typer's coercion returns for an unset single-valued option
            if isinstance(value, bool) and _BOOLISH.issuperset(typing.get_args(self._descriptor.annotation)
                                                               or (self._descriptor.annotation,)):
                return value  # a flag of a bool / bool | None option: a bool already
        if self._real is None:
            self._real = self._build(self._descriptor)
        return self._real.coerce(value, param=param, ctx=ctx)


def _coerce_given_values_only(param: Any) -> None:
    """Defer ``param``'s typer coercion (only where this typer has the lazily built kind)."""
    if getattr(param, "_runtime_param", False) is not None or not hasattr(param, "type_descriptor"):
        return
    try:
        from typer._coercion import build_runtime_param
    except ImportError:  # another typer: leave the parameter as it is
        return
    param._runtime_param = _GivenValuesOnly(param.type_descriptor, build_runtime_param)


def _defer_coercions(command: Any) -> None:
    """:func:`_coerce_given_values_only` for ``command``'s parameters (and its sub-commands') when it parses."""
    original = command.parse_args

    def parse_args(ctx: typer.Context, args: list[str]) -> list[str]:
        for param in command.get_params(ctx):
            _coerce_given_values_only(param)
        return original(ctx, args)

    command.parse_args = parse_args
    for sub in (getattr(command, "commands", None) or {}).values():
        _defer_coercions(sub)

