"""The one request builder: every entry point that starts a run validates its inputs here, once.

``navigator explore|ask|investigate``, a batch's per-job models and the MCP server's ``explore`` /
``ask`` tools build their workflow input through :func:`build_request`,
:func:`build_research_request` and :func:`build_investigation_request`, which share
:func:`base_fields` — the repository, the goal or question, the USD budget, the mode, the model,
the output folder and the approval timeout — so no surface accepts what another refuses. The
field checks themselves are :mod:`cli.runinput`'s; what the worker must serve is checked by
:func:`check_models`. Every refusal is a one-line :class:`~navtypes.errors.NavigatorError`, raised
before anything starts. No credentials ever enter a request.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

from durable_navigator.activities.pricing_loader import load_pricing_table
from durable_navigator.cli.config import NavigatorConfig
from durable_navigator.cli.errors import CliError
from durable_navigator.cli.preflight import IN_PROCESS, problems_here, refuse_unservable
from durable_navigator.cli.runinput import budget_or_default, check_text, validated
from durable_navigator.cli.sources import source_fields
from durable_navigator.navcore.navigator.guardrails import RunProfile
from durable_navigator.navcore.investigation.investigation import WORKER_PROFILE, InvestigationRequest
from durable_navigator.navcore.model.model import StreamGuard
from durable_navigator.navcore.model.modelspec import parse_model_spec
from durable_navigator.navcore.navigator.requests import ApprovalConfig, ExplorationRequest, ModelCallConfig
from durable_navigator.navcore.research.research import ResearchRequest
from durable_navigator.navcore.run_kinds import EXPLORE, INVESTIGATION, RESEARCH, RunKind
from durable_navigator.navcore.navigator.state import ExecutionMode
from durable_navigator.navtypes.errors import BudgetError, ConfigError, ModelError
from durable_navigator.navtypes.levels import MAX_TOKEN_BUDGET, MIN_TOKEN_BUDGET

__all__ = ["new_run_id", "validate_model", "check_models", "stream_guard", "check_token_budget", "base_fields",
           "build_request", "build_research_request", "build_investigation_request"]

#: run ids: ``<kind's prefix>-<repo name>-<8 hex>``; the slug keeps ids readable in the Web UI
_SLUG = re.compile(r"[^a-z0-9]+")
_SLUG_CHARS = 32
#: what a goal looks like, in the refusal of a bad one
_EXAMPLES = {EXPLORE.workflow_type: '"how is the budget enforced?"', RESEARCH.workflow_type: '"how is the budget enforced?"',
             INVESTIGATION.workflow_type: '"audit authorization; list gaps"'}


def new_run_id(kind: RunKind, repo: Path) -> str:
    """A fresh, readable run id for a run of ``kind`` on ``repo`` (``nav-``, ``ask-``, ``inv-``…)."""
    slug = _SLUG.sub("-", repo.name.lower()).strip("-")[:_SLUG_CHARS] or "repo"
    return f"{kind.id_prefix}-{slug}-{uuid.uuid4().hex[:8]}"


def validate_model(model: str, config: NavigatorConfig, local_worker: bool) -> None:
    """Refuse what the CLI can tell alone: an unknown or unpriced model, a missing local script.

    Whether the worker can serve it (credentials, its prices, its files) is asked of the
    worker: :mod:`cli.preflight`.
    """
    spec = parse_model_spec(model, frozenset(config.all_endpoints()))  # the one parser: ModelError says what to do
    # BudgetError names how to add a price (a local endpoint declares its own in navigator.yaml)
    load_pricing_table(config.pricing_file, endpoints=config.endpoints).rates_for(spec.model)
    script = spec.script or ""
    if script and local_worker and not Path(script).expanduser().is_file():
        raise ModelError(f"decision script {script} does not exist; pass scripted:<path of a YAML/JSON file>")


def check_models(models: list[str], config: NavigatorConfig, local_worker: bool) -> None:
    """Every model a run may call: known and priced, and — when this process's worker will serve the run —
    servable here (it is this process, so it is asked before any server starts)."""
    for name in models:
        validate_model(name, config, local_worker)
    if local_worker:
        problems = problems_here(models, config)  # the configured endpoints count
        for name in models:
            refuse_unservable(name, problems, IN_PROCESS)


def stream_guard(config: NavigatorConfig, profile: RunProfile | None) -> StreamGuard:
    """The run's stream guard: the run profile's, else navigator.yaml / the environment's."""
    if profile is not None and profile.stream is not None:
        return profile.stream
    return StreamGuard(first_chunk_timeout_s=config.stream.first_chunk_timeout_s,
                       inter_chunk_timeout_s=config.stream.inter_chunk_timeout_s)


def check_token_budget(tokens: int, what: str) -> None:
    """The map's budget must hold the engine's smallest map and no more than its largest; ``what`` names it."""
    if tokens > MAX_TOKEN_BUDGET:
        raise BudgetError(f"{what} is above the largest map of {MAX_TOKEN_BUDGET:,} tokens; "
                          f"use {MIN_TOKEN_BUDGET} to {MAX_TOKEN_BUDGET}")
    if tokens < MIN_TOKEN_BUDGET:
        raise BudgetError(
            f"{what} is below the minimum map size of {MIN_TOKEN_BUDGET} tokens (the repo map's "
            f"header alone needs that many); use {MIN_TOKEN_BUDGET} or more"
        )


def base_fields(kind: RunKind, repo: Path | str, text: str, *, config: NavigatorConfig, interactive: bool,
                budget_usd: str | None, model: str | None, out: Path | None, ref: str | None = None) -> dict[str, Any]:
    """The fields every run's request has, validated: repository (a path, or a git URL at ``ref``: see
    :mod:`cli.sources`), goal (or question), budget, mode, model, output folder, approval timeout, the warm host's start timeout. The goal's
    field is named by the kind (``goal`` / ``question``)."""
    source = source_fields(repo, ref)
    text = check_text(text, kind.text_label.upper(), _EXAMPLES[kind.workflow_type])
    budget = budget_or_default(budget_usd, config.defaults.budget_usd, config.source)
    return {
        **source,
        kind.text_label: text,
        "mode": ExecutionMode.INTERACTIVE if interactive else ExecutionMode.AUTONOMOUS,
        "budget_usd": budget,
        "model": (model or config.model).strip(),
        "out_dir": str((out or config.defaults.out_dir).expanduser().resolve()),
        "approval": ApprovalConfig(timeout_s=config.defaults.approval_timeout_s),
        "host_start_timeout_s": config.defaults.host_start_timeout_s,
    }


def build_request(
    repo: Path | str, goal: str, *, config: NavigatorConfig, interactive: bool, budget_usd: str | None,
    tokens: int | None, model: str | None, max_iterations: int | None, out: Path | None,
    profile: Path | None = None, planning: str = "auto", review: bool = False, ref: str | None = None,
) -> ExplorationRequest:
    """An exploration's workflow input, validated (no credentials in it, ever)."""
    base = base_fields(EXPLORE, repo, goal, config=config, interactive=interactive, budget_usd=budget_usd,
                       model=model, out=out, ref=ref)
    if tokens is not None:
        check_token_budget(tokens, f"--tokens {tokens}")
    else:
        where = f" in {config.source}" if config.source else ""
        check_token_budget(config.defaults.token_budget, f"defaults.token_budget {config.defaults.token_budget}{where}")
    run_profile = None
    if profile is not None:
        from durable_navigator.activities.profiles import load_run_profile

        if not profile.is_file():
            raise CliError(f"--profile {profile} does not exist; pass a run-profile YAML file")
        run_profile = load_run_profile(profile)
    return validated(
        ExplorationRequest, **base,
        token_budget=tokens if tokens is not None else config.defaults.token_budget,
        max_iterations=max_iterations if max_iterations is not None else config.defaults.max_iterations,
        profile=run_profile, planning=planning, review=review,
        model_call=ModelCallConfig(stream=stream_guard(config, run_profile)),
    )


def _profiles(profiles_file: Path | None) -> dict[str, Any]:
    from durable_navigator.activities.profiles import load_agent_profiles

    if profiles_file is not None and not profiles_file.is_file():
        raise CliError(f"--profiles {profiles_file} does not exist; pass an agent-profiles YAML file")
    return load_agent_profiles(profiles_file)


def build_research_request(
    repo: Path | str, question: str, *, config: NavigatorConfig, interactive: bool, budget_usd: str | None,
    model: str | None, out: Path | None, profile: str = "researcher", profiles_file: Path | None = None,
    ref: str | None = None,
) -> ResearchRequest:
    """A research run's workflow input, validated (no credentials in it, ever)."""
    base = base_fields(RESEARCH, repo, question, config=config, interactive=interactive, budget_usd=budget_usd,
                       model=model, out=out, ref=ref)
    profiles = _profiles(profiles_file)
    own = profiles.get(profile)
    if own is None:
        raise ConfigError(f"--profile {profile!r} is not a profile; use one of {', '.join(sorted(profiles))}")
    if own.kind != "research":
        research = sorted(n for n, p in profiles.items() if p.kind == "research")
        raise ConfigError(f"--profile {profile!r} is a {own.kind} profile; ask runs a research profile: "
                          f"{', '.join(research)}")
    return validated(ResearchRequest, **base, profile=own, profiles=profiles,
                     planning="direct" if own.planning == "direct" else "auto")


def build_investigation_request(
    repo: Path | str, goal: str, *, config: NavigatorConfig, interactive: bool, budget_usd: str | None,
    model: str | None, out: Path | None, max_stages: int = 4, branches: int = 1, worker: str | None = None,
    profiles_file: Path | None = None, ref: str | None = None,
) -> InvestigationRequest:
    """An investigation's workflow input, validated (no credentials in it, ever)."""
    base = base_fields(INVESTIGATION, repo, goal, config=config, interactive=interactive, budget_usd=budget_usd,
                       model=model, out=out, ref=ref)
    profiles = {n: p for n, p in _profiles(profiles_file).items() if p.kind == "research"}
    own = WORKER_PROFILE
    if worker is not None:
        if worker not in profiles:
            raise ConfigError(f"--worker {worker!r} is not a research profile; use one of {', '.join(sorted(profiles))}")
        own = profiles[worker]
    return validated(InvestigationRequest, **base, worker=own, profiles=profiles, max_stages=max_stages,
                     branches=branches)
