"""``navigator map REPO``: the repo map itself, as the navigator's first turn sees it.

The same engine, cache and token counter the worker uses, in this process (no
Temporal): ``--goal`` ranks for a goal, ``--plan`` renders a flight plan (YAML,
``repo-map schema`` prints its schema), ``--tokens`` sets the budget. The map
goes to stdout; a one-line summary to stderr (stdout stays the map, for pipes).
"""

from __future__ import annotations

import json
from pathlib import Path

import typer

from durable_navigator.cli.common import config_of, stdout
from durable_navigator.cli.errors import handles_errors, stderr
from durable_navigator.cli.runrequest import check_token_budget
from durable_navigator.cli.progress import IndexProgressBar
from durable_navigator.cli.runinput import check_repository, check_text, validated
from durable_navigator.navtypes.flightplan import FlightPlan

__all__ = ["plan_for"]

# map_app and its commands' signatures and help: cli/signatures.py


def plan_for(plan_file: Path | None, goal: str | None, tokens: int | None, default_tokens: int) -> FlightPlan:
    """The flight plan to render: the file's (or the explore default), with ``goal`` / ``tokens`` applied."""
    from durable_navigator.repomap.plan_io import load_flight_plan

    plan = load_flight_plan(plan_file) if plan_file is not None else FlightPlan()
    budget = tokens if tokens is not None else (plan.token_budget if plan_file is not None else default_tokens)
    # checked before any model sees it: the model's own refusal is a pydantic traceback
    check_token_budget(budget, f"--tokens {budget}" if tokens is not None else f"token budget {budget}")
    update: dict[str, object] = {"token_budget": budget}
    if goal is not None:
        update["goal"] = check_text(goal, "--goal", '--goal "retry logic"') if goal.strip() else None
    return validated(FlightPlan, **{**plan.model_dump(), **update})


@handles_errors
def run_map_command(
    ctx: typer.Context,
    repo: Path,
    goal: str | None,
    plan: Path | None,
    tokens: int | None,
    json_out: bool,
) -> None:
    """The ``navigator map`` command (its options and help: :mod:`cli.signatures`)."""
    from durable_navigator.repomap import RepoMap

    config = config_of(ctx)
    root = check_repository(repo)
    flight_plan = plan_for(plan, goal, tokens, config.defaults.token_budget)
    with IndexProgressBar(stderr) as bar:
        engine = RepoMap.open(root, progress=bar.update)
    result = engine.render(flight_plan)
    meta = result.metadata
    if json_out:
        typer.echo(json.dumps({"text": result.text, "metadata": meta.model_dump(mode="json"),
                               "flight_plan": flight_plan.model_dump(mode="json")}, indent=1, sort_keys=True))
        return
    stdout.file.write(result.text if result.text.endswith("\n") else result.text + "\n")
    stderr.print(f"{meta.tokens_used}/{meta.token_budget} tokens · {meta.files_total} files · "
                 f"{meta.index_version}", markup=False)
