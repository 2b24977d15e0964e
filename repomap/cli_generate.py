"""What ``repo-map generate`` does once its arguments are read (by :mod:`repomap.cli`'s fast path
or by the typer app in :mod:`repomap.cli_app`): one function, so both print the same bytes.

Imports only the standard library at the top; the engine when it runs, pydantic
only for a ``--plan`` file, a value the flight-plan model must word an error
for, or ``--format json``.
"""

from __future__ import annotations

import gc
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from durable_navigator.navtypes.errors import NavigatorError
    from durable_navigator.navtypes.flightplan import FlightPlan

__all__ = ["run_generate", "fail", "DefaultPlan", "EXIT_HELP", "EXIT_INPUT"]

EXIT_HELP = "Exit codes: 0 ok; 2 bad usage or input (one-line error on stderr); 1 internal error."
EXIT_INPUT = 2
#: ``FlightPlan.goal``'s max_length
_MAX_GOAL_CHARS = 8000


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
    from durable_navigator.repomap.engine import RepoMap

    was_enabled = gc.isenabled()
    gc.disable()
    try:
        try:
            if fmt not in ("text", "json"):
                raise NavigatorError(f"--format {fmt!r} is not supported; use text or json")
            fp = _plan(plan, budget, goal)
            rm = RepoMap.open(path, cache_dir=cache_dir, jobs=jobs)
            try:
                if fmt == "text":
                    sys.stdout.write(rm.render_text(fp, include_timings=timings))
                    return 0
                result = rm.render(fp, include_timings=timings)
            finally:
                rm.close()  # the process may end without tearing the interpreter down (cli.main)
        except NavigatorError as exc:
            return fail(exc)
    finally:
        if was_enabled:
            gc.enable()
    doc = {"text": result.text, "metadata": result.metadata.model_dump(mode="json"),
           "files": [f.model_dump(mode="json") for f in result.files]}
    sys.stdout.write(json.dumps(doc, indent=1) + "\n")
    return 0


@dataclass(frozen=True)
class DefaultPlan:
    """``FlightPlan(token_budget=…, goal=…)`` as the engine reads it, without pydantic.

    What ``repo-map generate`` renders when no ``--plan`` file is given: every
    other field has ``FlightPlan``'s default (``tests/repomap/test_cli_fast.py``
    compares them). Used only for values ``FlightPlan`` would accept as they are;
    anything else goes through the model, which words the error.
    """

    token_budget: int = 4096
    goal: str | None = None
    default_level: int | None = None
    rules: tuple = ()
    focus_paths: tuple = ()
    focus_symbols: tuple = ()
    exclude: tuple = ()
    show_why: bool = True
    pinned: tuple = ()


def _plan(plan: Path | None, budget: int | None, goal: str | None) -> Any:
    from durable_navigator.navtypes.levels import MAX_TOKEN_BUDGET

    if (plan is None and (budget is None or 0 < budget <= MAX_TOKEN_BUDGET)
            and (goal is None or len(goal) <= _MAX_GOAL_CHARS)):
        return DefaultPlan(**({"token_budget": budget} if budget is not None else {}), goal=goal)
    from durable_navigator.navtypes.flightplan import FlightPlan

    fp = _load_plan(plan) if plan is not None else FlightPlan()
    updates: dict[str, object] = {}
    if budget is not None:
        updates["token_budget"] = budget
    if goal is not None:
        updates["goal"] = goal
    return _validated(fp, updates) if updates else fp


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
