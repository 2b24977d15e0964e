"""The typer app of ``repo-map`` (help, usage errors, ``schema``, ``stats``, every ``generate``
the fast path of :mod:`repomap.cli` leaves to it; both run :func:`repomap.cli_generate.run_generate`).

Each command imports what it needs when it runs (the engine, the flight plan
model, YAML): ``repo-map --help`` loads typer and nothing of the engine.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from durable_navigator.navtypes.errors import NavigatorError
from durable_navigator.repomap.cli_generate import EXIT_HELP as _EXIT_HELP, fail, run_generate

__all__ = ["app"]

app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  help=f"Repo-map engine: ranked, budgeted maps of a code repository. {_EXIT_HELP}")


@app.command(help=f"Render the map of PATH for a flight plan / goal. {_EXIT_HELP}")
def generate(
    path: Annotated[Path, typer.Argument(help="repository root")],
    plan: Annotated[Path | None, typer.Option("--plan", help="flight plan YAML file")] = None,
    budget: Annotated[int | None, typer.Option("--budget", help="token budget (overrides the plan)")] = None,
    goal: Annotated[str | None, typer.Option("--goal", help="task text used for ranking (overrides the plan)")] = None,
    fmt: Annotated[str, typer.Option("--format", help="text (the map) or json (map + metadata)")] = "text",
    cache_dir: Annotated[Path | None, typer.Option("--cache-dir", help=(
        "index cache directory (default: $NAVIGATOR_CACHE_DIR/repomap or the user cache dir)"))] = None,
    jobs: Annotated[int | None, typer.Option("--jobs", help="parallel indexing processes")] = None,
    timings: Annotated[bool, typer.Option("--timings", help=(
        "put open/rank timings into the header (the output is then no longer byte-identical "
        "across runs)"))] = False,
) -> None:
    """Render the map of ``path``."""
    code = run_generate(path, plan=plan, budget=budget, goal=goal, fmt=fmt, cache_dir=cache_dir, jobs=jobs,
                        timings=timings)
    if code:
        raise typer.Exit(code)


@app.command(help="Print the flight plan JSON Schema.")
def schema() -> None:
    """Print the JSON Schema of a flight plan."""
    from durable_navigator.repomap.plan_io import flight_plan_json_schema

    sys.stdout.write(json.dumps(flight_plan_json_schema(), indent=2) + "\n")


@app.command(help=f"Index PATH (cached) and print statistics as JSON. {_EXIT_HELP}")
def stats(
    path: Annotated[Path, typer.Argument(help="repository root")],
    cache_dir: Annotated[Path | None, typer.Option("--cache-dir", help=(
        "index cache directory (default: $NAVIGATOR_CACHE_DIR/repomap or the user cache dir)"))] = None,
    jobs: Annotated[int | None, typer.Option("--jobs", help="parallel indexing processes")] = None,
) -> None:
    """Print index statistics of ``path``."""
    from durable_navigator.repomap.engine import RepoMap

    try:
        rm = RepoMap.open(path, cache_dir=cache_dir, jobs=jobs)
    except NavigatorError as exc:
        raise typer.Exit(fail(exc)) from None
    sys.stdout.write(json.dumps(rm.stats(), indent=1) + "\n")
