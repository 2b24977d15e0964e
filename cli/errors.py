"""Exit codes and the one place CLI commands turn exceptions into them.

Every command is wrapped by :func:`handles_errors`: a
:class:`~navtypes.errors.NavigatorError` (or one of the CLI's own errors below)
is printed once, on one line, to stderr, and the process exits with the
documented code. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from enum import IntEnum
from typing import ParamSpec, TypeVar

import typer
from rich.console import Console

from durable_navigator.navtypes.errors import NavigatorError

__all__ = [
    "ExitCode",
    "CliError",
    "TemporalUnreachableError",
    "RunNotFoundError",
    "RunFailedError",
    "stderr",
    "fail",
    "handles_errors",
    "EXIT_CODE_DOC",
]

P = ParamSpec("P")
R = TypeVar("R")

#: stderr console for errors and progress; stdout stays clean for --json
stderr = Console(stderr=True, highlight=False, soft_wrap=True)


class ExitCode(IntEnum):
    """Documented exit codes of ``navigator`` (README, ``navigator --help``)."""

    OK = 0
    RUN_FAILED = 1  #: the run failed, was terminated, or stopped abnormally (approval timeout)
    BAD_INPUT = 2  #: bad arguments, configuration, repository, model or budget
    TEMPORAL_UNREACHABLE = 3  #: no Temporal server (or no worker answering) at the address
    NOT_FOUND = 4  #: no such workflow, or it is closed and cannot take the signal
    INTERRUPTED = 130  #: Ctrl-C


EXIT_CODE_DOC = (
    "Exit codes: 0 ok · 1 run failed or stopped abnormally · 2 bad input/usage · "
    "3 cannot reach Temporal (or no worker) · 4 run not found / already closed · 130 interrupted."
)


class CliError(NavigatorError):
    """A CLI-level failure with its own exit code."""

    kind = "CliError"
    exit_code: ExitCode = ExitCode.BAD_INPUT


class TemporalUnreachableError(CliError):
    """Nothing answers at the Temporal address, or no worker polls the task queue."""

    kind = "TemporalUnreachableError"
    exit_code = ExitCode.TEMPORAL_UNREACHABLE


class RunNotFoundError(CliError):
    """The workflow id is unknown, or the run is closed and cannot take a signal."""

    kind = "RunNotFoundError"
    exit_code = ExitCode.NOT_FOUND


class RunFailedError(CliError):
    """The run ended in failure (workflow failed, terminated, timed out, cancelled)."""

    kind = "RunFailedError"
    exit_code = ExitCode.RUN_FAILED


def fail(message: str, code: ExitCode) -> typer.Exit:
    """Print ``message`` to stderr and return the ``typer.Exit`` to raise."""
    stderr.print(f"[bold red]Error:[/bold red] {message}", markup=True)
    return typer.Exit(int(code))


def _exit_code_of(exc: NavigatorError) -> ExitCode:
    if isinstance(exc, CliError):
        return exc.exit_code
    # DevServerError (embedded server would not start) means no Temporal to talk to
    if exc.kind == "DevServerError":
        return ExitCode.TEMPORAL_UNREACHABLE
    return ExitCode.BAD_INPUT


def handles_errors(func: Callable[P, R]) -> Callable[P, R]:
    """Wrap a typer command: domain errors → one stderr line + exit code."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except NavigatorError as exc:
            problems = getattr(exc, "problems", None)
            if problems:
                # configuration errors: one line per field, as the style asks
                stderr.print(f"[bold red]Error:[/bold red] {len(problems)} configuration problem(s):")
                for problem in problems:
                    stderr.print(f"  - {problem}", markup=False)
                raise typer.Exit(int(_exit_code_of(exc))) from None
            raise fail(str(exc).replace("[", r"\["), _exit_code_of(exc)) from None
        except KeyboardInterrupt:
            stderr.print("Interrupted.")
            raise typer.Exit(int(ExitCode.INTERRUPTED)) from None

    return wrapper
