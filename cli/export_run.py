"""What ``navigator export ID`` runs (its signature and help: :mod:`cli.export_cmd`).

1. The run must exist (exit 4 otherwise), be an exploration and have completed: anything else is a
   one-line error saying what to do, before anything is written.
2. Its event history is fetched, every run of a continued chain (walked back through each run's
   ``continued_execution_run_id``, so it needs no visibility query), and its request read from the
   first run's start event: the goal, the repository path, the model and the map budget.
3. The pack (``context.md``) and ``report.json`` are read where the run wrote them (or, for the pack,
   from the local artifact store); the commit is the one its map indexed (``git:<short>+idx:…``).
4. The case folder (``history/*.json``, ``context.md``, ``case.json``) is written to a hidden sibling
   and renamed into place: whole or not at all.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import typer
from temporalio.client import Client, WorkflowHistory

from durable_navigator.activities.evaluation.cases import (commit_date, run_commit, shown_in_full, source_at,
                                                           write_folder)
from durable_navigator.cli.common import config_of, print_json, run_async, stdout
from durable_navigator.cli.connect import open_session
from durable_navigator.cli.errors import CliError, handles_errors
from durable_navigator.cli.handles import describe_run, is_running, status_name
from durable_navigator.activities.artifacts import ArtifactStore
from durable_navigator.cli.mcpserver.pack import read_context, read_report
from durable_navigator.cli.stores import open_artifact_store
from durable_navigator.navcore.evaluation.cases import (CASE_FILE, GOLD_NOTES, CaseVerdict, QualityCase,
                                                        history_file_name)
from durable_navigator.navcore.navigator.requests import ExplorationRequest, ExplorationResult
from durable_navigator.navcore.run_kinds import EXPLORE
from durable_navigator.activities.gitsource import checkout_commit
from durable_navigator.activities.sources import default_source_cache
from durable_navigator.navcore.run.sources import GitSource, display_root, parse_locator

__all__ = ["run_export", "fetch_chain"]


@dataclass
class FinishedRun:
    """What the export reads from Temporal: the chain's histories, the first request, the result."""

    histories: list[WorkflowHistory]
    request: ExplorationRequest
    result: ExplorationResult


async def fetch_chain(client: Client, workflow_id: str, run_id: str | None) -> list[WorkflowHistory]:
    """The histories of every run of ``workflow_id``'s continue-as-new chain ending in ``run_id``, oldest first."""
    chain: list[WorkflowHistory] = []
    while True:
        history = await client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
        chain.append(history)
        run_id = history.events[0].workflow_execution_started_event_attributes.continued_execution_run_id or None
        if run_id is None:
            return chain[::-1]


async def _finished_run(client: Client, workflow_id: str) -> FinishedRun:
    """The completed exploration ``workflow_id``; a one-line error (what to do) for anything else."""
    handle, desc = await describe_run(client, workflow_id, result_type=ExplorationResult)
    if desc.workflow_type != EXPLORE.workflow_type:
        raise CliError(f"run {workflow_id} is a {desc.workflow_type}; `navigator export` takes an exploration "
                       "(`navigator explore`, or a batch job's run: `navigator batch results BATCH` lists them)")
    if is_running(desc):
        raise CliError(f"run {workflow_id} is still running; wait for it (`navigator result {workflow_id} --wait`) "
                       f"or end it (`navigator stop {workflow_id}`), then export it")
    if status_name(desc.status) != "completed":
        raise CliError(f"run {workflow_id} is {status_name(desc.status)}: it wrote no context pack to export; "
                       "export a completed run (`navigator ls --status completed`)")
    histories = await fetch_chain(client, workflow_id, desc.run_id)
    start = histories[0].events[0].workflow_execution_started_event_attributes
    request = client.data_converter.payload_converter.from_payloads(start.input.payloads, [ExplorationRequest])[0]
    return FinishedRun(histories, request, await handle.result())


def _verdicts(result: ExplorationResult, store: ArtifactStore) -> list[CaseVerdict]:
    report = json.loads(read_report(result, store))
    return [CaseVerdict(step=d["step"], verdict=d["verdict"], feedback=d.get("feedback"))
            for d in report.get("decisions", []) if d.get("verdict")]


def _gold(repo: Path, commit: str | None, context: str, gold: list[str]) -> tuple[list[str], str]:
    """The right files and where they come from: ``--gold`` (each checked), else the pack's full files."""
    source = source_at(repo, commit)
    where = f"{repo} at {commit[:12]}" if commit else str(repo)
    if gold:
        for path in gold:
            if not source(path):
                raise CliError(f"--gold {path} is not a non-empty file of {where}; name files by their "
                               "repository-relative path as the pack shows them")
        return sorted(set(gold)), "user"
    files = shown_in_full(context, source)
    if not files:
        raise CliError("the pack shows no file in full, so the case would have no right files; name them with "
                       "--gold PATH (repeatable)")
    return files, "pack-full"


def _local_tree(locator: str) -> Path:
    """The run's tree on this machine: its path; a snapshot's origin (where it was taken, here); a git
    run's commit, checked out from this machine's mirror of the URL (as a worker does)."""
    source = parse_locator(locator)
    if isinstance(source, GitSource):
        return checkout_commit(source.url, source.commit, default_source_cache() / "git")
    return Path(display_root(locator))


def build_case(run: FinishedRun, gold: list[str], store: ArtifactStore) -> tuple[QualityCase, dict[str, bytes]]:
    """The case and every file of its folder (relative path -> bytes); the pack and report read from
    where the run wrote them, else from ``store`` (the configured artifact store: a worker on another
    host wrote them there)."""
    req, res = run.request, run.result
    repo = _local_tree(req.repo_path)
    context = read_context(res, store)
    commit = run_commit(repo, res.map_metadata.index_version if res.map_metadata else "")
    files, source = _gold(repo, commit, context, gold)
    names = [history_file_name(res.workflow_id, i + 1, len(run.histories)) for i in range(len(run.histories))]
    case = QualityCase(id=res.workflow_id, goal=req.goal, repo=str(repo), commit=commit,
                       commit_date=commit_date(repo, commit) if commit else "", gold_files=files,
                       gold_source=source, gold_note=GOLD_NOTES[source], model=req.model,
                       token_budget=req.token_budget, stop_reason=res.stop_reason.value, cost_usd=str(res.cost_usd),
                       histories=[f"history/{n}" for n in names], verdicts=_verdicts(res, store))
    out: dict[str, bytes] = {f"history/{n}": h.to_json().encode() for n, h in zip(names, run.histories, strict=True)}
    out[case.pack] = context.encode("utf-8")
    out[CASE_FILE] = case.model_dump_json(indent=1).encode("utf-8")
    return case, out


@handles_errors
def run_export(ctx: typer.Context, workflow_id: str, out: Path | None, gold: list[str], json_out: bool) -> None:
    """The ``navigator export`` command."""
    config = config_of(ctx)
    folder = (out or config.defaults.out_dir / "cases" / history_file_name(workflow_id, 1, 1)[:-5])
    folder = folder.expanduser().resolve()
    if folder.exists():  # checked again when renaming into place; said here before any work
        raise CliError(f"{folder} already exists; pass another --out or remove it")
    store = open_artifact_store(config)  # a bad artifacts: section is refused before any work

    async def go() -> FinishedRun:
        async with open_session(config) as session:
            return await _finished_run(session.client, workflow_id)

    case, files = build_case(run_async(go()), gold, store)
    write_folder(folder, files)
    histories = [str(folder / h) for h in case.histories]
    if json_out:
        print_json({**case.model_dump(mode="json"), "folder": str(folder), "case_file": str(folder / CASE_FILE),
                    "context_file": str(folder / case.pack), "history_files": histories})
        return
    stdout.print(f"exported {workflow_id} to {folder}", markup=False, soft_wrap=True)
    stdout.print(f"  case: {case.goal[:80]} · {case.repo}" + (f" @ {case.commit[:12]}" if case.commit else
                 " (not a git checkout: no commit, `eval --cases` cannot re-run it)"), markup=False, soft_wrap=True)
    stdout.print(f"  right files ({case.gold_source}): {', '.join(case.gold_files)}", markup=False, soft_wrap=True)
    for h in histories:
        stdout.print(f"  history: {h}  (replay it: copy into tests/histories/exported/)", markup=False,
                     soft_wrap=True)
