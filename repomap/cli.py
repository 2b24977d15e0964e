"""``repo-map``: the engine on its own (generate a map, export the plan schema, index stats).

Exit codes: 0 success; 2 bad usage or input (missing repository, bad flight
plan, budget too small: a one-line message on stderr). Other failures are bugs
and exit 1 with a traceback.

Each command imports what it needs when it runs (the engine, the flight plan
model, YAML): ``repo-map --help`` loads typer and nothing of the engine.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from durable_navigator.navtypes.errors import NavigatorError

if TYPE_CHECKING:
    from durable_navigator.navtypes.flightplan import FlightPlan

__all__ = ["app", "main"]

_EXIT_HELP = "Exit codes: 0 ok; 2 bad usage or input (one-line error on stderr); 1 internal error."
EXIT_INPUT = 2

app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  help=f"Repo-map engine: ranked, budgeted maps of a code repository. {_EXIT_HELP}")


def _fail(exc: NavigatorError) -> None:
    from rich.console import Console

    Console(stderr=True, highlight=False, soft_wrap=True).print(f"[red]error:[/red] {exc}", markup=True)
    raise typer.Exit(EXIT_INPUT)


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
    from durable_navigator.navtypes.flightplan import FlightPlan
    from durable_navigator.repomap.engine import RepoMap

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
        _fail(exc)
        return
    if fmt == "json":
        doc = {"text": result.text, "metadata": result.metadata.model_dump(mode="json"),
               "files": [f.model_dump(mode="json") for f in result.files]}
        sys.stdout.write(json.dumps(doc, indent=1) + "\n")
    else:
        sys.stdout.write(result.text)


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
        _fail(exc)
        return
    sys.stdout.write(json.dumps(rm.stats(), indent=1) + "\n")


def main() -> None:
    """Console-script entry point (``repo-map``)."""
    app()


if __name__ == "__main__":
    main()
