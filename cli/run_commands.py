"""The run commands' signatures and help: ``navigator explore``, ``ask`` and ``investigate``.

Standard library + typer only (like :mod:`cli.app`): ``navigator explore --help`` imports
this module and nothing else of the CLI. Each command's body imports its own module
(``cli.explore``, ``cli.ask``, ``cli.investigate``: the Temporal client, the request
models, the follower) and runs ``run_<command>`` there with the same arguments.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from durable_navigator.cli.lazy import command_group
from durable_navigator.cli.options import SOURCE_CHOICES, refuse
from durable_navigator.navtypes.levels import MIN_TOKEN_BUDGET

__all__ = ["explore_app", "ask_app", "investigate_app", "InteractiveOpt", "BudgetOpt", "ModelOpt", "DetachOpt"]

explore_app = command_group(help="Run explorations.")
ask_app = command_group(help="Answer questions about a repository, with citations.")
investigate_app = command_group(help="Staged investigations of a repository, carried out by subagents.")

InteractiveOpt = Annotated[
    bool, typer.Option("--interactive", "-i", help="Approve / reject / edit / stop each turn.", show_default="off")
]
BudgetOpt = Annotated[
    str | None,
    typer.Option("--budget-usd", metavar="USD", help="USD limit of the run.",
                 show_default="defaults.budget_usd in navigator.yaml: 1.0"),
]
ModelOpt = Annotated[
    str | None,
    typer.Option("--model", metavar="MODEL", help="offline | scripted:<file> | gemini-* | <endpoint>:<model> (openai:, "
                 "ollama:, openrouter:, or an endpoint of navigator.yaml).",
                 envvar="NAVIGATOR_MODEL", show_default="model in navigator.yaml: offline"),
]
DetachOpt = Annotated[
    bool, typer.Option("--detach", help="Start the run on a running server and return at once (a worker must serve "
                       "it: `navigator worker`).", show_default="off: follow it here")
]
#: --json of the commands that start a run (the result, or the started id when detached)
RunJsonOpt = Annotated[
    bool, typer.Option("--json", help="Print the result (or the started id) as JSON.", show_default="off")
]
#: --profiles of the commands whose runs use agent profiles (ask, investigate)
#: --ref of the commands that start a run: which commit of a git URL REPO names
RefOpt = Annotated[
    str | None, typer.Option("--ref", metavar="REF", help="Branch, tag or commit of a git URL REPO (resolved to its "
                             "commit before the run starts).", show_default="HEAD of the URL")
]
def _source_choice(value: str) -> str:
    """Refuse a ``--source`` that is not auto, path or snapshot, in one line (before anything else)."""
    if value not in SOURCE_CHOICES:
        refuse(f"--source {value!r}: expected one of {', '.join(SOURCE_CHOICES)}")
    return value


#: --source of the commands that start a run: how a path REPO travels to the workers
SourceOpt = Annotated[
    str, typer.Option("--source", metavar="auto|path|snapshot", callback=_source_choice,
                      help="How a path REPO reaches the workers. auto: a snapshot (the tree uploaded, uncommitted "
                      "changes included) when artifacts: is an object store, else the path; path: the path (the "
                      "workers must see it there); snapshot: always a snapshot. Said on stderr (source: ...).")
]
ProfilesFileOpt = Annotated[
    Path | None, typer.Option("--profiles", metavar="FILE", help="Agent-profiles YAML adding or overriding the "
                              "shipped ones.", show_default="the shipped profiles")
]


@explore_app.command()
def explore(
    ctx: typer.Context,
    repo: Annotated[str, typer.Argument(metavar="REPO", help="Repository to explore: a path, or a git URL "
                                        "(https://…, git@host:…, file://…; with --ref).", show_default=False)],
    goal: Annotated[str, typer.Argument(metavar="GOAL", help="What the context window is for.", show_default=False)],
    interactive: InteractiveOpt = False,
    budget_usd: BudgetOpt = None,
    tokens: Annotated[
        int | None,
        typer.Option("--tokens", metavar="N", help=f"Token budget of the context map (at least {MIN_TOKEN_BUDGET}: "
                     "the map's header alone needs that many).",
                     show_default="defaults.token_budget in navigator.yaml: 8192"),
    ] = None,
    model: ModelOpt = None,
    max_iterations: Annotated[
        int | None,
        typer.Option("--max-iterations", metavar="N", min=1, help="Iteration cap.",
                     show_default="defaults.max_iterations in navigator.yaml: 12"),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", metavar="DIR", help="Output folder; the run writes DIR/<workflow id>/context.md.",
                     show_default="defaults.out_dir in navigator.yaml: ./navigator-out"),
    ] = None,
    detach: DetachOpt = False,
    profile: Annotated[
        Path | None,
        typer.Option("--profile", metavar="FILE", help="Run-profile YAML: guardrails (loop / stall detection, goal "
                     "anchoring, caps); see examples/run-profile.yaml.", show_default="the built-in guardrails"),
    ] = None,
    planning: Annotated[
        str,
        typer.Option(
            "--planning", metavar="auto|direct|off",
            help="Planning phase. auto: analyze the goal, optionally review, then a plan of stages with success "
            "criteria (one direct stage for a simple goal); direct: one stage; off: no stages, the open-ended loop.",
        ),
    ] = "auto",
    review: Annotated[
        bool, typer.Option("--review", help="Critic / pragmatist / detailer review of the plan when the analysis asks.",
                           show_default="off")
    ] = False,
    workflow_id: Annotated[
        str | None, typer.Option("--id", metavar="ID", help="Workflow id.", show_default="nav-<repo>-<random>")
    ] = None,
    json_out: RunJsonOpt = False,
    ref: RefOpt = None,
    source: SourceOpt = "auto",
    branches: Annotated[
        int, typer.Option("--branches", metavar="N", min=1, max=4, help="Branch-and-compare: N explorations with "
                          "different planning strategies in parallel, the best-scoring pack kept.",
                          show_default="1: one exploration")
    ] = 1,
) -> None:
    """Explore REPO for GOAL and write the context pack.

    Prints the run's Web UI link, follows it (live progress; with --interactive each
    turn asks for a verdict) and writes <out>/<workflow id>/context.md and report.json.
    Without a configured server it starts one in the background, which outlives this
    command so the link keeps working (see `navigator server status`).
    """
    from durable_navigator.cli.explore import run_explore

    run_explore(ctx=ctx, repo=repo, goal=goal, interactive=interactive, budget_usd=budget_usd, tokens=tokens, model=model, max_iterations=max_iterations, out=out, detach=detach, profile=profile, planning=planning, review=review, workflow_id=workflow_id, json_out=json_out, branches=branches, ref=ref, source=source)


@ask_app.command()
def ask(
    ctx: typer.Context,
    repo: Annotated[str, typer.Argument(metavar="REPO", help="Repository to research: a path, or a git URL "
                                        "(https://…, git@host:…, file://…; with --ref).", show_default=False)],
    question: Annotated[str, typer.Argument(metavar="QUESTION", help="The question about the code.",
                                            show_default=False)],
    interactive: InteractiveOpt = False,
    budget_usd: BudgetOpt = None,
    model: ModelOpt = None,
    profile: Annotated[
        str, typer.Option("--profile", metavar="NAME", help="The run's agent profile (a research one: researcher, "
                          "reviewer, or one of --profiles).")
    ] = "researcher",
    profiles_file: ProfilesFileOpt = None,
    out: Annotated[
        Path | None, typer.Option("--out", metavar="DIR", help="Output folder; the run writes DIR/<workflow id>/answer.md.",
                                  show_default="defaults.out_dir in navigator.yaml: ./navigator-out")
    ] = None,
    detach: DetachOpt = False,
    workflow_id: Annotated[
        str | None, typer.Option("--id", metavar="ID", help="Workflow id.", show_default="ask-<repo>-<random>")
    ] = None,
    json_out: RunJsonOpt = False,
    ref: RefOpt = None,
    source: SourceOpt = "auto",
) -> None:
    """Answer QUESTION about REPO, with citations.

    Prints the run's Web UI link, follows it, then prints the answer (every claim cited
    path:start-end) and writes <out>/<workflow id>/answer.md and report.json. Without a
    configured server it starts one in the background, which outlives this command so
    the link keeps working (see `navigator server status`).
    """
    from durable_navigator.cli.ask import run_ask

    run_ask(ctx=ctx, repo=repo, question=question, interactive=interactive, budget_usd=budget_usd, model=model, profile=profile, profiles_file=profiles_file, out=out, detach=detach, workflow_id=workflow_id, json_out=json_out, ref=ref, source=source)


@investigate_app.command()
def investigate(
    ctx: typer.Context,
    repo: Annotated[str, typer.Argument(metavar="REPO", help="Repository to investigate: a path, or a git URL "
                                        "(https://…, git@host:…, file://…; with --ref).", show_default=False)],
    goal: Annotated[str, typer.Argument(metavar="GOAL", help="What to investigate (clauses separated by ';' "
                                        "become stages offline).", show_default=False)],
    interactive: InteractiveOpt = False,
    budget_usd: BudgetOpt = None,
    model: ModelOpt = None,
    max_stages: Annotated[
        int, typer.Option("--max-stages", metavar="N", min=1, max=12, help="Most stages the plan may have.")
    ] = 4,
    branches: Annotated[int, typer.Option("--branches", metavar="N", min=1, max=4,
                                          help="Branch-and-compare: alternative workers per stage, the best kept.")] = 1,
    worker: Annotated[
        str | None, typer.Option("--worker", metavar="NAME", help="Research profile of the stage workers.",
                                 show_default="the investigation's own worker profile")
    ] = None,
    profiles_file: ProfilesFileOpt = None,
    out: Annotated[
        Path | None, typer.Option("--out", metavar="DIR", help="Output folder; the run writes DIR/<workflow id>/report.md.",
                                  show_default="defaults.out_dir in navigator.yaml: ./navigator-out")
    ] = None,
    detach: DetachOpt = False,
    workflow_id: Annotated[
        str | None, typer.Option("--id", metavar="ID", help="Workflow id.", show_default="inv-<repo>-<random>")
    ] = None,
    json_out: RunJsonOpt = False,
    ref: RefOpt = None,
    source: SourceOpt = "auto",
) -> None:
    """Investigate GOAL in REPO by stages; write a report.

    Plans stages, runs each on subagents (interactive: the plan waits for a verdict),
    then writes <out>/<workflow id>/report.md (findings, criteria with evidence) and
    report.json. Prints the run's Web UI link and follows it; without a configured
    server it starts one in the background (see `navigator server status`).
    """
    from durable_navigator.cli.investigate import run_investigate

    run_investigate(ctx=ctx, repo=repo, goal=goal, interactive=interactive, budget_usd=budget_usd, model=model, max_stages=max_stages, branches=branches, worker=worker, profiles_file=profiles_file, out=out, detach=detach, workflow_id=workflow_id, json_out=json_out, ref=ref, source=source)
