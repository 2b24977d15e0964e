"""Exit codes and the one place CLI commands turn exceptions into them.

Every command is wrapped by :func:`handles_errors`: a
:class:`~navtypes.errors.NavigatorError` (or one of the CLI's own errors below)
is printed once, on one line, to stderr, and the process exits with the
documented code. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import typer

from durable_navigator.cli.consoles import stderr
from durable_navigator.cli.exitcodes import EXIT_CODE_DOC, ExitCode
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
