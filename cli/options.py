"""The root command's options, kept on ``ctx.obj``, and the option types commands share (stdlib + typer only:
the root of ``navigator --help`` and of the light command signatures)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from durable_navigator.navtypes.runmodes import Status

if TYPE_CHECKING:
    from durable_navigator.cli.config import NavigatorConfig

__all__ = ["GlobalOptions", "JsonOpt", "WorkflowIdArg", "TurnOpt", "PlanOpt", "SenderOpt", "EXECUTION_STATUSES",
           "NAVIGATOR_STATUSES", "DEFAULT_PORT", "refuse", "reason_option", "checked_sender", "SOURCE_CHOICES"]

#: the values of ``--source``: how a path REPO travels to the workers (``cli/sources.py``)
SOURCE_CHOICES = ("auto", "path", "snapshot")

JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON to stdout.", show_default="off")]


def refuse(message: str) -> NoReturn:
    """Refuse a parameter's value with the CLI's one ``Error:`` line and exit code 2 (bad input).

    Parameter callbacks use this rather than ``typer.BadParameter``, whose report is click's usage
    frame (``Usage: …``, ``Try … --help``, a blank line) around an ``Invalid value for …`` line: a value
    that parses but cannot be used is refused like every other bad input, on one line.
    """
    from durable_navigator.cli.errors import ExitCode, fail  # rich: imported only to refuse

    raise fail(message.replace("[", r"\["), ExitCode.BAD_INPUT)


def is_utf8(text: str) -> bool:
    """:func:`repomap.fsnames.is_utf8`, imported on use: ``--help`` must not load the repomap package."""
    from durable_navigator.repomap.fsnames import is_utf8 as check

    return check(text)


def utf8_id(value: str) -> str:
    """Refuse an id that is empty or not text (a non-UTF-8 argument): Temporal ids are UTF-8, the RPC would crash on it.

    An empty id is bad input (exit 2), not a lookup: checked before any connection is tried.
    """
    if not value.strip():
        refuse("the id is empty; copy the id from `navigator ls` (or `navigator batch ls`)")
    if not is_utf8(value):
        refuse(f"the id {value!r} is not valid UTF-8; copy the id from `navigator ls` (or `navigator batch ls`)")
    return value


WorkflowIdArg = Annotated[
    str, typer.Argument(metavar="WORKFLOW_ID", help="Workflow id of the run (printed by `explore`, listed by `ls`).",
                        show_default=False, callback=utf8_id)
]


@dataclass
class GlobalOptions:
    """Options of the root callback, kept on ``ctx.obj``."""

    config_path: Path | None = None
    log_json: bool | None = None
    log_level: str | None = None
    _config: NavigatorConfig | None = None


# ---- what the light command signatures (cli/signatures.py) and the command modules share

#: Temporal execution statuses ``ls --status`` accepts (the first column of its output)
EXECUTION_STATUSES = {
    "running": "Running", "completed": "Completed", "failed": "Failed", "canceled": "Canceled",
    "terminated": "Terminated", "timed_out": "TimedOut", "continued_as_new": "ContinuedAsNew",
}

NAVIGATOR_STATUSES = tuple(s.value for s in Status if s.value not in EXECUTION_STATUSES)

TurnOpt = Annotated[
    int | None,
    typer.Option("--turn", min=1, metavar="N", help="Turn the verdict answers; refused if it is not awaiting one.",
                 show_default="the turn awaiting a verdict"),
]

PlanOpt = Annotated[
    bool,
    typer.Option("--plan", help="With --turn N: answer round N of the stage plan, not map turn N.",
                 show_default="off"),
]

#: the longest sender a message takes (navcore.navigator.messages.Sender; not imported: this module stays light)
MAX_SENDER_CHARS = 200


def checked_sender(value: str | None) -> str | None:
    """Refuse a ``--sender`` no message would take (not UTF-8, too long) before anything is sent."""
    if value is None:
        return None
    if not is_utf8(value):
        refuse(f"--sender {value!r} is not valid UTF-8; pass a plain name such as alice")
    if len(value) > MAX_SENDER_CHARS:
        refuse(f"--sender is {len(value):,} characters long, at most {MAX_SENDER_CHARS}; pass a short name such as alice")
    return value


SenderOpt = Annotated[
    str | None, typer.Option("--sender", metavar="NAME", help="Who sends it.", envvar="NAVIGATOR_SENDER",
                             show_default="$USER@cli", callback=checked_sender)
]

#: the longest stop reason a message takes (navcore.navigator.messages.StopInput and BatchStopInput)
MAX_REASON_CHARS = 500


def checked_reason(value: str) -> str:
    """Refuse a ``--reason`` no stop message would take (not UTF-8, too long) before anything is sent."""
    if not is_utf8(value):
        refuse(f"--reason {value[:40]!r} is not valid UTF-8; write it as plain text")
    if len(value) > MAX_REASON_CHARS:
        refuse(f"--reason is {len(value):,} characters long, at most {MAX_REASON_CHARS}; say it shorter")
    return value


def reason_option(help_text: str) -> Any:
    """The ``--reason TEXT`` of a stop command (``help_text`` says where it is shown)."""
    return typer.Option("--reason", metavar="TEXT", help=help_text, callback=checked_reason)


#: the streamable HTTP endpoint's default port and path
DEFAULT_PORT = 8765

BatchIdArg = Annotated[str, typer.Argument(metavar="BATCH_ID", help="Batch id (printed by `batch run`, listed by "
                                           "`batch ls`).", show_default=False, callback=utf8_id)]
