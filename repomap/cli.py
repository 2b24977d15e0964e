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
same :func:`run_generate`, so they print the same bytes
(``tests/repomap/test_cli_fast.py``).
"""

from __future__ import annotations

import gc
import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from durable_navigator.navtypes.errors import NavigatorError
    from durable_navigator.navtypes.flightplan import FlightPlan

__all__ = ["app", "main", "run_generate", "fast_generate_args", "EXIT_HELP", "EXIT_INPUT"]

EXIT_HELP = "Exit codes: 0 ok; 2 bad usage or input (one-line error on stderr); 1 internal error."
EXIT_INPUT = 2

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


def fail(exc: NavigatorError) -> int:
    """Print ``exc`` as the one-line error on stderr; the exit code of a bad input."""
    from rich.console import Console

    Console(stderr=True, highlight=False, soft_wrap=True).print(f"[red]error:[/red] {exc}", markup=True)
    return EXIT_INPUT


def run_generate(path: Path, *, plan: Path | None = None, budget: int | None = None, goal: str | None = None,
                 fmt: str = "text", cache_dir: Path | None = None, jobs: int | None = None,
                 timings: bool = False) -> int:
    """``repo-map generate``: print the map (or its JSON); the exit code (0, or 2 for a bad input).

    The cyclic garbage collector is paused while the index is loaded and the
    map rendered: a warm open builds a few hundred thousand long-lived objects
    (records, vocabularies) and no cycles, so each collection walked them all
    for nothing (≈25 ms of a warm run).
    """
    from durable_navigator.navtypes.errors import NavigatorError
    from durable_navigator.navtypes.flightplan import FlightPlan
    from durable_navigator.repomap.engine import RepoMap

    was_enabled = gc.isenabled()
    gc.disable()
    try:
        try:
            if fmt not in ("text", "json"):
                raise NavigatorError(f"--format {fmt!r} is not supported; use text or json")
            fp = _load_plan(plan) if plan is not None else FlightPlan()
            updates: dict[str, object] = {}
            if budget is not None:
                updates["token_budget"] = budget
            if goal is not None:
                updates["goal"] = goal
            if updates:
                fp = _validated(fp, updates)
            rm = RepoMap.open(path, cache_dir=cache_dir, jobs=jobs)
            result = rm.render(fp, include_timings=timings)
        except NavigatorError as exc:
            return fail(exc)
    finally:
        if was_enabled:
            gc.enable()
    if fmt == "json":
        doc = {"text": result.text, "metadata": result.metadata.model_dump(mode="json"),
               "files": [f.model_dump(mode="json") for f in result.files]}
        sys.stdout.write(json.dumps(doc, indent=1) + "\n")
    else:
        sys.stdout.write(result.text)
    return 0


def _load_plan(path: Path) -> FlightPlan:
    from durable_navigator.repomap.plan_io import load_flight_plan  # YAML: only with --plan

    return load_flight_plan(path)


def _validated(fp: FlightPlan, updates: dict[str, object]) -> FlightPlan:
    from pydantic import ValidationError

    from durable_navigator.navtypes.errors import FlightPlanError
    from durable_navigator.navtypes.flightplan import FlightPlan

    try:
        return FlightPlan.model_validate({**fp.model_dump(), **updates})
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"])
        raise FlightPlanError(f"--{key.replace('_', '-')}: {err['msg'].lower()}; "
                              "budget must be 1..2000000 tokens") from exc


def main() -> None:
    """Console-script entry point (``repo-map``): the fast ``generate`` path, else the typer app."""
    fast = fast_generate_args(sys.argv[1:])
    if fast is not None:
        code = run_generate(**fast)
        sys.stdout.flush()
        sys.exit(code)
    from durable_navigator.repomap.cli_app import app

    app()


if __name__ == "__main__":
    main()
