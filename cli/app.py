"""The ``navigator`` typer app: the root options and the table of commands.

Each command group lives in its own module with its own ``typer.Typer()``
(``explore``, ``ask``, ``investigate``, ``signals``, ``reads``, ``serve``, ``batch``, ``config_cmd``,
``mapcmd``); the root lists them in :data:`COMMANDS` and imports a module only
when one of its commands runs (:mod:`cli.lazy`), so ``navigator --help`` and
``navigator --version`` import nothing but typer. This module and the ones it
imports at the top must stay standard library + typer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from durable_navigator.cli.exitcodes import EXIT_CODE_DOC
from durable_navigator.cli.exits import run_and_exit
from durable_navigator.cli.lazy import LazyCommand, LazyGroup, command_group
from durable_navigator.cli.options import GlobalOptions

__all__ = ["app", "main", "COMMANDS"]

_PKG = "durable_navigator.cli"

#: every command of ``navigator``, in the order ``--help`` lists them, with its one-line help
COMMANDS: dict[str, LazyCommand] = {
    "explore": LazyCommand(f"{_PKG}.run_commands", "explore_app", "Explore REPO for GOAL and write the context pack."),
    "ask": LazyCommand(f"{_PKG}.run_commands", "ask_app", "Answer QUESTION about REPO, with citations."),
    "investigate": LazyCommand(f"{_PKG}.run_commands", "investigate_app",
                               "Investigate GOAL in REPO by stages; write a report."),
    "status": LazyCommand(f"{_PKG}.signatures", "reads_app", "Where a run is, and the change awaiting a verdict."),
    "log": LazyCommand(f"{_PKG}.signatures", "reads_app", "The decision log of a run."),
    "result": LazyCommand(f"{_PKG}.signatures", "reads_app", "The result of a run: stop reason, cost, context pack."),
    "ls": LazyCommand(f"{_PKG}.signatures", "reads_app", "List runs, newest first."),
    "ui": LazyCommand(f"{_PKG}.signatures", "reads_app", "Print the Web UI link of a run."),
    "approve": LazyCommand(f"{_PKG}.signatures", "signals_app", "Approve the turn (or stage plan) awaiting a verdict."),
    "reject": LazyCommand(f"{_PKG}.signatures", "signals_app", "Reject the turn (or stage plan), with feedback."),
    "stop": LazyCommand(f"{_PKG}.signatures", "signals_app", "Finalize a run now with the best map so far."),
    "mode": LazyCommand(f"{_PKG}.signatures", "signals_app", "Switch a run between interactive and autonomous."),
    "budget": LazyCommand(f"{_PKG}.signatures", "signals_app", "Add USD to a run's budget."),
    "batch": LazyCommand(f"{_PKG}.batch", "batch_app", "Many repositories × goals under one USD budget.", group=True),
    "map": LazyCommand(f"{_PKG}.signatures", "map_app", "Print the repo map of REPO (what the navigator sees)."),
    "eval": LazyCommand(f"{_PKG}.evalcmd", "eval_app", "Score the context on REPO's own history (eval.md).",
                        group=True),
    "export": LazyCommand(f"{_PKG}.export_cmd", "export_app",
                          "Save a finished run as a replay fixture and quality case."),
    "gc": LazyCommand(f"{_PKG}.gc_cmd", "gc_app", "Delete the artifact store's blobs that no run references."),
    "server": LazyCommand(f"{_PKG}.server", "server_app", "Run the embedded Temporal server; status; stop.",
                          group=True),
    "worker": LazyCommand(f"{_PKG}.signatures", "worker_app", "Run a navigator worker until SIGTERM / Ctrl-C."),
    "config": LazyCommand(f"{_PKG}.config_cmd", "config_app", "Inspect the configuration.", group=True),
    "mcp": LazyCommand(f"{_PKG}.signatures", "mcp_app",
                       "Serve coding agents over MCP (explore, ask, runs)."),
}


#: the free-text argument of a command, for the hint on an unknown option (a goal starting with '-')
_TEXT_ARGUMENTS = {"goal": "GOAL", "question": "QUESTION"}


class NavigatorGroup(LazyGroup):
    """The root group: :data:`COMMANDS`, imported on use."""

    lazy_commands = COMMANDS

    def invoke(self, ctx: typer.Context) -> object:
        """Run the command; an unknown option of a command taking free text says how to pass text
        that starts with ``-`` (the parser reads ``"-w flag …"`` as the option ``-w``)."""
        try:
            return super().invoke(ctx)
        except Exception as exc:
            # typer vendors click (``typer._click``) without exporting its exceptions: match by name
            if type(exc).__name__ == "NoSuchOption":
                _hint_text_argument(exc)
            raise


def _hint_text_argument(exc: Any) -> None:
    """Append the ``--`` hint to a no-such-option error of a command with a GOAL / QUESTION argument."""
    command = exc.ctx.command if getattr(exc, "ctx", None) is not None else None
    names = [p.name for p in getattr(command, "params", []) if getattr(p, "param_type_name", "") == "argument"]
    text = next((_TEXT_ARGUMENTS[n] for n in names if n in _TEXT_ARGUMENTS), None)
    if text is None or command is None:
        return
    before = " ".join(n.upper() for n in names if n not in _TEXT_ARGUMENTS)
    exc.message = (f"{exc.message}. If the {text} starts with '-', put -- before it: "
                   f"navigator {command.name} {before} -- \"{exc.option_name} …\"")


app = command_group(
    name="navigator",
    add_completion=True,
    cls=NavigatorGroup,
    help=(
        "Durable navigator: an LLM explores a repository through a budgeted repo map inside a "
        f"Temporal workflow and hands over the best context window. {EXIT_CODE_DOC}"
    ),
    no_args_is_help=True,
)


#: what ``--log-level`` accepts, in any case (``workers.logging.configure_logging`` reads the same names)
LOG_LEVELS = ("debug", "info", "warning", "warn", "error", "critical")


def _log_level(value: str | None) -> str | None:
    """Refuse an unknown level as a usage error (exit 2), before any command configures logging with it."""
    if value is not None and value.lower() not in LOG_LEVELS:
        raise typer.BadParameter(f"{value!r} is not a level; use debug, info, warning or error")
    return value


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version  # only for --version

        typer.echo(f"navigator (durable-navigator) {version('durable-navigator')}")
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    config: Annotated[
        Path | None,
        typer.Option("--config", help="navigator.yaml to use.", envvar="NAVIGATOR_CONFIG",
                     show_default="./navigator.yaml, then the user config dir"),
    ] = None,
    log_json: Annotated[
        bool | None,
        typer.Option("--log-json/--log-console", help="Log as JSON lines or readable console lines.",
                     show_default="log.json_output in navigator.yaml: console"),
    ] = None,
    log_level: Annotated[
        str | None,
        typer.Option("--log-level", help="debug, info, warning or error.", callback=_log_level,
                     show_default="warning for commands, log.level (info) for the worker"),
    ] = None,
    version: Annotated[
        bool, typer.Option("--version", help="Print the version and exit.", callback=_version, is_eager=True)
    ] = False,
) -> None:
    """Global options, stored for the commands (config is loaded lazily, errors reported by them)."""
    ctx.obj = GlobalOptions(config_path=config, log_json=log_json, log_level=log_level)


def main() -> None:
    """Console-script entry point (``navigator``): run the app, leave without interpreter teardown.

    See ``cli/exits.py`` for why (the Temporal bridge's threads abort a finalizing interpreter).
    """
    run_and_exit(app)
