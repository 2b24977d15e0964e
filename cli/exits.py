"""Leaving the ``navigator`` process: exact exit codes, no interpreter teardown.

Why not a plain ``sys.exit``: the Temporal client's Rust bridge completes every
RPC on a tokio thread that calls back into Python (pyo3-async-runtimes'
``future_into_py``: ``with_gil`` → ``loop.call_soon_threadsafe``). That call
writes the event loop's self-pipe, which releases the GIL; our main thread,
woken by that very write, can finish ``asyncio.run``, print the result and
start ``Py_FinalizeEx`` before the tokio thread takes the GIL back. A thread
that takes the GIL during finalization is made to exit (``PyThread_exit_thread``);
the forced unwind runs pyo3's GIL guard, whose ``PyGILState_Release`` aborts
the process (``Fatal Python error: PyGILState_Release: thread state … must be
current when releasing``, exit 134; a use of the freed thread state is exit
139). The SDK's runtime is process-global and its threads cannot be joined from
Python (temporalio/sdk-python#300), so the last RPC of every command races
interpreter shutdown — measured: ``status --json`` aborted 13 of 40 times.

So :func:`main` does what ``Py_FinalizeEx`` does *before* its dangerous part —
join non-daemon threads and run the ``threading`` exit hooks, run the
``atexit`` callbacks (``logging.shutdown`` flushes structlog's handler;
``multiprocessing`` reaps its children), flush stdout / stderr — and then ends
the process with ``os._exit(code)``, skipping only the module teardown and
garbage collection during which the bridge's threads crash. Everything a
command must stop (the embedded dev server, the in-process worker, process
pools) is stopped by the command itself, inside its ``asyncio.run``, never by
a finalizer.

The in-process test runner calls ``app`` directly and never reaches this code.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
from collections.abc import Callable
from typing import Any, NoReturn

__all__ = ["exit_code_of", "finish", "run_and_exit", "EXIT_FLUSH_FAILED"]

#: what CPython's ``Py_Exit`` returns when flushing stdout fails at exit (e.g. a closed pipe)
EXIT_FLUSH_FAILED = 120


def exit_code_of(exc: SystemExit) -> int:
    """The process exit code ``sys.exit(x)`` would give (``None`` → 0, text → printed, 1)."""
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _run_exit_hooks() -> None:
    """The orderly part of interpreter shutdown, in CPython's order."""
    # 1. join non-daemon threads and run threading's own exit hooks (concurrent.futures
    #    executors register theirs there): Py_FinalizeEx -> wait_for_thread_shutdown
    shutdown = getattr(threading, "_shutdown", None)
    if shutdown is not None:
        shutdown()
    # 2. atexit callbacks: logging.shutdown (flushes the structlog handler), multiprocessing
    #    (terminates and joins its daemonic children), anything a library registered
    run = getattr(atexit, "_run_exitfuncs", None)
    if run is not None:
        run()


def _flush_std_streams() -> bool:
    """Flush stdout and stderr; False when stdout could not be flushed (as CPython reports)."""
    ok = True
    for stream in (sys.stdout, sys.stderr):
        if stream is None:
            continue
        try:
            stream.flush()
        except (OSError, ValueError):
            ok = ok and stream is not sys.stdout
    return ok


def finish(code: int) -> NoReturn:
    """Flush, run the exit hooks, and end the process with ``code`` without finalization."""
    try:
        _run_exit_hooks()
    except BaseException:  # noqa: BLE001 - a failing hook must not turn into a teardown crash
        with contextlib.suppress(Exception):
            sys.excepthook(*sys.exc_info())  # type: ignore[arg-type]
    if not _flush_std_streams():
        code = EXIT_FLUSH_FAILED
    os._exit(code)


def run_and_exit(app: Callable[[], Any]) -> NoReturn:
    """Run the typer ``app`` (standalone mode) and leave with its exact exit code.

    typer maps usage errors to 2 and Ctrl-C to 130; our commands raise
    ``typer.Exit(code)`` (``cli.errors``). An exception nobody handled is a bug:
    it is printed the way the interpreter would (typer's hook), exit code 1.
    """
    try:
        app()
        code = 0
    except SystemExit as exc:
        code = exit_code_of(exc)
    except KeyboardInterrupt:
        # outside a command (typer maps one inside to 130 itself)
        code = 130
    except BaseException as exc:  # noqa: BLE001 - reported exactly as an uncaught exception would be
        sys.excepthook(type(exc), exc, exc.__traceback__)
        code = 1
    finish(code)
