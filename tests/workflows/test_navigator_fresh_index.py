"""A long-lived worker sees the repository as it is now (issue 10, section 2).

One worker serves several explorations of the same repository while its files
change in between: ``git checkout`` of another commit (files deleted, renamed,
added, changed) and a copy outside git with files deleted and renamed by hand;
and two explorations of one root at once while a checkout happens under them.
Every run must finish ``finalized`` and its context pack must show the tree of
its own time. Real dev server, real engine (private cache dir), offline model.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from tests.support.git import commit_all, git, init_repo
from tests.support.navigator import FIXTURE_REPO
from temporalio.client import Client

from durable_navigator.activities.artifacts import LocalArtifactStore
from durable_navigator.activities.pricing_loader import TablePricer
from durable_navigator.activities.models.registry import ModelRegistry
from durable_navigator.activities.navigator import NavigatorActivities
from durable_navigator.navcore.navigator.requests import ExplorationRequest, ExplorationResult
from durable_navigator.navcore.navigator.state import StopReason
from durable_navigator.repomap import RepoMap
from durable_navigator.workflows.navigator import NavigatorWorkflow

GOAL = "why does the budget plugin double-count tokens on streamed calls?"
PLUGIN = "src/budgetkit/plugin.py"
LEDGER = "src/budgetkit/ledger.py"
RENAMED = "src/budgetkit/budget_plugin.py"


def git_repo_with_two_commits(dest: Path) -> tuple[Path, str, str]:
    """The fixture repository as commit A, then commit B: plugin.py renamed, ledger.py deleted,
    a streaming module added, cli.py changed. Returns (root, A, B) with B checked out."""
    root = dest / "repo"
    shutil.copytree(FIXTURE_REPO, root)
    init_repo(root)
    a = commit_all(root, "A")
    git(root, "mv", PLUGIN, RENAMED)
    git(root, "rm", "-q", LEDGER)
    (root / "src/budgetkit/streaming.py").write_text(
        'def on_stream_end(usage):\n    """Record the final usage of a streamed call."""\n    return usage\n')
    with (root / "src/budgetkit/cli.py").open("a") as fh:
        fh.write("\n\ndef tokens_command():\n    return 'tokens'\n")
    return root, a, commit_all(root, "B")


def _activities(tmp_path: Path) -> NavigatorActivities:
    cache = tmp_path / "cache"
    return NavigatorActivities(LocalArtifactStore(tmp_path / "artifacts"), pricer=TablePricer.load(),
                               engine_factory=lambda root: RepoMap.open(root, cache_dir=cache))


def _request(root: Path, out: Path) -> ExplorationRequest:
    return ExplorationRequest(repo_path=str(root), goal=GOAL, model="offline", token_budget=900,
                              max_iterations=6, out_dir=str(out))


async def _explore(client: Client, task_queue: str, req: ExplorationRequest) -> ExplorationResult:
    return await client.execute_workflow(
        NavigatorWorkflow.run, req, id=f"nav-fresh-{uuid.uuid4()}", task_queue=task_queue,
        execution_timeout=timedelta(seconds=120),
    )


def _context(result: ExplorationResult) -> str:
    assert result.stop_reason is StopReason.FINALIZED, (result.stop_reason, result.stop_detail)
    return Path(result.context_path or "").read_text()


async def test_checkout_between_explorations_on_one_worker(client, task_queue, start_worker, tmp_path) -> None:
    root, commit_a, commit_b = git_repo_with_two_commits(tmp_path)
    async with start_worker(_activities(tmp_path)):
        at_b = await _explore(client, task_queue, _request(root, tmp_path / "out"))
        git(root, "checkout", "-q", commit_a)  # budget_plugin.py and streaming.py vanish
        at_a = await _explore(client, task_queue, _request(root, tmp_path / "out"))
        git(root, "checkout", "-q", commit_b)  # plugin.py and ledger.py vanish again
        (root / "src/budgetkit/cli.py").unlink()  # and a tracked file deleted by hand
        at_b2 = await _explore(client, task_queue, _request(root, tmp_path / "out"))
    ctx_b, ctx_a, ctx_b2 = _context(at_b), _context(at_a), _context(at_b2)
    assert RENAMED in ctx_b and PLUGIN not in ctx_b
    assert PLUGIN in ctx_a and RENAMED not in ctx_a and "streaming.py" not in ctx_a
    assert "def after_call" in ctx_a  # the restored file is read, not a stale record of it
    assert PLUGIN not in ctx_b2 and "src/budgetkit/cli.py" not in ctx_b2
    assert at_a.map_metadata is not None and f"git:{commit_a[:12]}+" in at_a.map_metadata.index_version
    assert at_b2.map_metadata is not None and f"git:{commit_b[:12]}+" in at_b2.map_metadata.index_version


async def test_copy_outside_git_with_files_deleted_and_renamed(client, task_queue, start_worker, tmp_path) -> None:
    root = tmp_path / "copy"
    shutil.copytree(FIXTURE_REPO, root)
    (root / "assets").mkdir()
    (root / "assets" / "logo.png").write_bytes(b"\x89PNG\0\0\0binary")
    async with start_worker(_activities(tmp_path)):
        first = await _explore(client, task_queue, _request(root, tmp_path / "out"))
        (root / PLUGIN).unlink()
        (root / LEDGER).rename(root / "src/budgetkit/book.py")
        second = await _explore(client, task_queue, _request(root, tmp_path / "out"))
    assert PLUGIN in _context(first)
    ctx = _context(second)
    assert PLUGIN not in ctx and LEDGER not in ctx and "src/budgetkit/book.py" in ctx
    # the context pack says what the map leaves out and why
    skipped = ctx.split("## Files not in the map", 1)[1]
    # at 900 tokens the frame gives way first: the skipped list may be a count pointing at report.json
    assert ("`assets/logo.png`" in skipped and "binary" in skipped) or "1 more skipped file, see report.json" in skipped
    report = json.loads((Path(second.context_path or "").parent / "report.json").read_text())
    listed = json.dumps(report["files_not_in_map"])
    assert "assets/logo.png" in listed and "binary" in listed


@pytest.mark.parametrize("rounds", [2])
async def test_two_explorations_of_one_root_at_once_with_a_checkout_under_them(
        client, task_queue, start_worker, tmp_path, rounds: int) -> None:
    root, commit_a, commit_b = git_repo_with_two_commits(tmp_path)
    async with start_worker(_activities(tmp_path)):
        for _ in range(rounds):
            runs = [asyncio.create_task(_explore(client, task_queue, _request(root, tmp_path / "out")))
                    for _ in range(2)]
            await asyncio.sleep(0.3)  # let them scan, then move the tree under them
            git(root, "checkout", "-q", commit_a)
            results = await asyncio.gather(*runs)
            for result in results:
                _context(result)
            git(root, "checkout", "-q", commit_b)


class _DeletingModel:
    """The offline model, but the tree loses files while it thinks (after the map it decides on)."""

    def __init__(self, inner, root: Path, paths: list[str]) -> None:  # noqa: ANN001 - an OfflineModel
        self.inner = inner
        self.root = root
        self.paths = paths
        self.turns = 0

    async def request(self, req, ctx):  # noqa: ANN001, ANN201 - the Model protocol
        if req.task.kind == "decide":
            self.turns += 1
            if self.turns == 1:
                for rel in self.paths:
                    (self.root / rel).unlink()
        return await self.inner.request(req, ctx)


async def test_files_vanishing_mid_run_are_skipped_not_fatal(client, task_queue, start_worker, tmp_path) -> None:
    root = tmp_path / "copy"
    shutil.copytree(FIXTURE_REPO, root)
    acts = _activities(tmp_path)
    model = _DeletingModel(acts.models.model("offline"), root, [PLUGIN, LEDGER])
    acts.models = ModelRegistry(acts.engine, overrides={"offline": model})
    async with start_worker(acts):
        result = await _explore(client, task_queue, _request(root, tmp_path / "out"))
    assert model.turns >= 2
    # the map (context.md's last section; the decision log above it quotes turn 1's plan, made while
    # the files were still there): the next render saw the tree as it is
    ctx = _context(result).split("## Repository map", 1)[1]
    assert PLUGIN not in ctx and LEDGER not in ctx
