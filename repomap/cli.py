"""``repo-map``: the engine on its own (generate a map, export the plan schema, index stats).

Exit codes: 0 success; 2 bad usage or input (missing repository, bad flight
plan, budget too small: a one-line message on stderr). Other failures are bugs
and exit 1 with a traceback.

Start-up: this module imports only the standard library. The commands and
their help are a typer app (:mod:`repomap.cli_app`), but typer parses
arguments by building a pydantic adapter per parameter on every call (about a
tenth of a second on its own). So :func:`main` reads the common shape of
``repo-map generate PATH [--goal TEXT] [--budget N] [--format F] [--plan FILE]
[--cache-dir DIR] [--jobs N] [--timings]`` itself and hands everything else —
``--help``, a usage error, an option given twice, a value that is not plainly
valid, the other commands — to the typer app, unchanged. Both paths run the
same :func:`repomap.cli_generate.run_generate`, so they print the same bytes
(``tests/repomap/test_cli_fast.py``).
"""

from __future__ import annotations

import gc
import os
import re
import sys
from pathlib import Path
from typing import Any

__all__ = ["app", "main", "fast_generate_args"]  # noqa: F822 (``app``: module __getattr__, imported on first use)

#: ``generate``'s options that take a value: flag -> (keyword, kind)
_VALUE_OPTIONS = {"--plan": ("plan", "path"), "--budget": ("budget", "int"), "--goal": ("goal", "str"),
                  "--format": ("fmt", "str"), "--cache-dir": ("cache_dir", "path"), "--jobs": ("jobs", "int")}
#: an int typer would read the same way (anything else: typer decides, and words the error)
_PLAIN_INT = re.compile(r"0|[1-9][0-9]{0,17}")


def __getattr__(name: str) -> Any:
    """``app`` (the typer app) is imported on first use: ``from repomap.cli import app`` still works."""
    if name == "app":
        from durable_navigator.repomap.cli_app import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def fast_generate_args(argv: list[str]) -> dict[str, Any] | None:
    """``run_generate``'s keywords for a plain ``generate`` command line, else None (typer's turn).

    Accepted: the command name first, one positional PATH, each option at most
    once as ``--opt VALUE`` or ``--opt=VALUE``, ``--timings``. None for
    anything else, including every value typer might read differently from
    ``Path(v)`` / ``int(v)`` / ``v`` (empty, starting with ``-``, an int with a
    sign or leading zeros), so typer answers those exactly as before.
    """
    if not argv or argv[0] != "generate":
        return None
    out: dict[str, Any] = {}
    path: Path | None = None
    args = argv[1:]
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--timings":
            if "timings" in out:
                return None
            out["timings"] = True
            continue
        if arg.startswith("-"):
            name, eq, value = arg.partition("=")
            spec = _VALUE_OPTIONS.get(name)
            if spec is None:
                return None
            if not eq:
                if i >= len(args):
                    return None
                value = args[i]
                i += 1
            key, kind = spec
            if key in out or not value or value.startswith("-"):
                return None
            if kind == "int":
                if not _PLAIN_INT.fullmatch(value):
                    return None
                out[key] = int(value)
            else:
                out[key] = Path(value) if kind == "path" else value
            continue
        if path is not None or not arg:
            return None
        path = Path(arg)
    if path is None:
        return None
    return {"path": path, **out}


def main() -> None:
    """Console-script entry point (``repo-map``): the fast ``generate`` path, else the typer app.

    One OpenBLAS thread unless the user chose otherwise: the engine does no dense linear
    algebra (its matrix products are sparse, in scipy's own C loops), but numpy's OpenBLAS
    starts a thread per core at import, and their start-up spin cost ~0.1 CPU-s of every
    ``repo-map`` process — a third of a warm ``generate``.
    """
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    fast = fast_generate_args(sys.argv[1:])
    if fast is not None:
        # a short-lived process that makes no garbage cycles worth collecting: no cyclic GC from
        # here, imports included (numpy's import alone triggered several full collections)
        gc.disable()
        from durable_navigator.repomap.cli_generate import run_generate

        code = run_generate(**fast)
        sys.stdout.flush()
        sys.stderr.flush()
        # Nothing is left to do but free memory: the engine's cache is closed, its index workers
        # have exited, no atexit hook of ours is pending. Tearing the interpreter down would free
        # every record, vocabulary and module one object at a time (≈0.08 s after a cold index);
        # the kernel frees the process at once. (An exception still exits the ordinary way.)
        os._exit(code)
    from durable_navigator.repomap.cli_app import app

    app()


if __name__ == "__main__":
    main()
