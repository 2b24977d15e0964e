"""Issue #31: repositories by reference — a snapshot the CLI uploads, a git URL + ref each worker fetches.

A worker and a CLI run as separate hosts (own HOME, XDG dirs, cwd; tests/support/hosts.py) sharing
only Temporal and a real S3-compatible server (SeaweedFS). The CLI's repository is moved away
before the worker starts, so a run that still names it by path fails (the worker cannot read it);
a snapshot run finishes, and its pack is byte-identical to the pack of the same tree by path.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import time
import uuid
from datetime import timedelta
from pathlib import Path

from temporalio.client import Client

from durable_navigator.navcore.navigator.requests import ExplorationRequest, ExplorationResult
from durable_navigator.navcore.run.sources import GitSource, PathSource, SnapshotSource
from tests.support.cli import FIXTURE_REPO
from tests.support.hosts import Host, host_pair
from tests.support.seaweed import SeaweedS3

GOAL = "how is the token budget enforced?"
#: a cold worker on a loaded 2-core machine
POLLING_WITHIN_S = 60.0
EXTRA = "def refund_tokens(ledger, amount):\n    \"\"\"Give unspent tokens back to the ledger.\"\"\"\n    return ledger - amount\n"


def _hosts(tmp_path: Path, s3: SeaweedS3, client: Client, task_queue: str) -> tuple[Host, Host]:
    return host_pair(tmp_path, s3, client.service_client.config.target_host, task_queue, "sources")[1:]


def _wait_polling(host: Host) -> None:
    deadline = time.monotonic() + POLLING_WITHIN_S
    while "worker polling" not in host.log():
        assert time.monotonic() < deadline, host.log()[-3000:]
        time.sleep(0.3)


async def _request_of(client: Client, wid: str) -> ExplorationRequest:
    """The workflow input the CLI started ``wid`` with, as recorded in its history."""
    history = await client.get_workflow_handle(wid).fetch_history()
    payloads = history.events[0].workflow_execution_started_event_attributes.input.payloads
    [request] = await client.data_converter.decode(payloads, [ExplorationRequest])
    return request


def _started(ran: subprocess.CompletedProcess[str]) -> str:
    assert ran.returncode == 0, ran.stderr[-3000:]
    return str(json.loads(ran.stdout)["workflow_id"])


async def _finished(client: Client, wid: str) -> ExplorationResult:
    handle = client.get_workflow_handle(wid, result_type=ExplorationResult)
    return await asyncio.wait_for(handle.result(), timeout=240)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
                               "GIT_COMMITTER_EMAIL": "t@example.com", "HOME": str(repo)}).stdout.strip()


async def test_a_snapshot_reaches_a_worker_that_cannot_read_the_path(
    client: Client, task_queue: str, tmp_path: Path, s3_server: SeaweedS3
) -> None:
    worker_host, cli_host = _hosts(tmp_path, s3_server, client, task_queue)
    repo = cli_host.root / "cwd" / "app"
    shutil.copytree(FIXTURE_REPO, repo)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "first")
    (repo / "src" / "budgetkit" / "refunds.py").write_text(EXTRA)  # a change nobody committed anywhere
    args = ("explore", str(repo), GOAL, "--detach", "--json", "--max-iterations", "3")
    first = await asyncio.to_thread(cli_host.run, *args)
    second = await asyncio.to_thread(cli_host.run, *args)
    wids = [_started(first), _started(second)]
    # an ask and an investigation (whose stages run as child workflows) of the same tree, by the same snapshot
    others = [_started(await asyncio.to_thread(cli_host.run, verb, str(repo), text, "--detach", "--json"))
              for verb, text in (("ask", "where is the token budget checked?"), ("investigate", GOAL))]
    # the CLI says which source it picked, and the second snapshot of the same tree sends no file again
    said = [line for line in first.stderr.splitlines() if line.startswith("source: ")]
    assert len(said) == 1 and said[0].startswith("source: snapshot ") and "9 files" in said[0], first.stderr
    assert "uploaded 9 files" in said[0]
    assert re.search(r"source: snapshot \w+ of .*: 9 files, [\d,]+ B; uploaded 0 files, 0 B", second.stderr)
    # the worker starts only now, and the tree is no longer where the CLI read it
    moved = tmp_path / "elsewhere"
    repo.rename(moved)
    with worker_host.worker():
        await asyncio.to_thread(_wait_polling, worker_host)
        results = [await _finished(client, wid) for wid in wids]
        for wid in others:
            came = await asyncio.to_thread(cli_host.run, "result", wid, "--wait", "--json", "--out",
                                           str(cli_host.root / "out"))
            assert came.returncode == 0, came.stderr[-3000:]
            assert "snapshot:" not in came.stdout  # the answer and report name the repository by its path
            answer = json.loads(came.stdout).get("answer_path")
            assert answer is None or f"Repository: `{repo}`" in Path(answer).read_text()
        request = await _request_of(client, wids[0])
        assert isinstance(request.source, SnapshotSource) and request.source.label == str(repo)
        # the same tree by path, once it is back where it was: the worker reads it from its disk
        moved.rename(repo)
        by_path = f"bypath-{uuid.uuid4().hex[:8]}"
        handle = await client.start_workflow(
            "NavigatorWorkflow", request.model_copy(update={"source": PathSource(path=str(repo))}), id=by_path,
            task_queue=task_queue, result_type=ExplorationResult, execution_timeout=timedelta(minutes=4))
        path_result = await asyncio.wait_for(handle.result(), timeout=240)
    assert [r.stop_reason.value for r in results] == ["finalized", "finalized"], results
    assert path_result.stop_reason.value == "finalized", path_result
    # byte-identical packs: two snapshot runs and the by-path run of the same tree
    shas = {r.context_ref.sha256 for r in (*results, path_result) if r.context_ref is not None}
    assert len(shas) == 1, shas
    shown = await asyncio.to_thread(cli_host.run, "result", wids[0], "--json", "--out", str(cli_host.root / "out"))
    assert shown.returncode == 0, shown.stderr[-3000:]
    context = Path(json.loads(shown.stdout)["context_path"]).read_text()
    assert f"Repository: `{repo}`" in context and "refunds.py" in context  # the uncommitted file is in the pack
    # `navigator ls --repo PATH` finds the snapshot runs of that path (NavigatorRepo is the path, not the locator)
    listed = await asyncio.to_thread(cli_host.run, "ls", "--repo", str(repo), "--json")
    assert listed.returncode == 0, listed.stderr[-3000:]
    assert {*wids, *others} <= {row["workflow_id"] for row in json.loads(listed.stdout)}, listed.stdout[-2000:]
    # the worker built the tree once, in its own cache, keyed by the manifest's hash
    trees = (worker_host.root / "cache" / "durable-navigator" / "sources" / "snapshots" / "trees")
    assert [t.name for t in trees.iterdir() if t.is_dir()] == [request.source.manifest_sha256]
    # with the origin's commit and history beside it (the map's header and the offline ranker use them)
    assert json.loads((trees / f"{request.source.manifest_sha256}.origin.json").read_text())["commit"]


async def test_a_git_url_and_ref_are_fetched_by_the_worker_host(
    client: Client, task_queue: str, tmp_path: Path, s3_server: SeaweedS3
) -> None:
    worker_host, cli_host = _hosts(tmp_path, s3_server, client, task_queue)
    origin = tmp_path / "origin"
    shutil.copytree(FIXTURE_REPO, origin)
    _git(origin, "init", "-q", "-b", "main")
    _git(origin, "add", "-A")
    _git(origin, "commit", "-q", "-m", "first")
    first_commit = _git(origin, "rev-parse", "HEAD")
    url = f"file://{origin}"
    # a bad URL and an unknown ref: one line each, before anything starts
    bad = await asyncio.to_thread(cli_host.run, "explore", f"file://{tmp_path}/nothing.git", GOAL, "--detach")
    assert bad.returncode == 2 and "cannot be read" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1, \
        bad.stderr
    unknown = await asyncio.to_thread(cli_host.run, "explore", url, GOAL, "--ref", "nope", "--detach")
    assert unknown.returncode == 2, unknown.stderr
    assert "--ref nope is not a branch or tag of" in unknown.stderr and "(branches: main)" in unknown.stderr
    with worker_host.worker():
        await asyncio.to_thread(_wait_polling, worker_host)
        ran = await asyncio.to_thread(cli_host.run, "explore", url, GOAL, "--ref", "main", "--json",
                                      "--max-iterations", "3", "--out", str(cli_host.root / "out"))
        assert ran.returncode == 0, ran.stderr[-3000:]
        assert f"source: git {url} main at commit {first_commit}" in ran.stderr
        # a new commit on main: the worker's mirror fetches it, and the run names the new commit
        (origin / "src" / "budgetkit" / "refunds.py").write_text(EXTRA)
        _git(origin, "add", "-A")
        _git(origin, "commit", "-q", "-m", "refunds")
        second_commit = _git(origin, "rev-parse", "HEAD")
        again = await asyncio.to_thread(cli_host.run, "explore", url, GOAL, "--ref", "main", "--json",
                                        "--max-iterations", "3", "--out", str(cli_host.root / "out"))
        assert again.returncode == 0, again.stderr[-3000:]
    first, second = json.loads(ran.stdout), json.loads(again.stdout)
    assert first["stop_reason"] == second["stop_reason"] == "finalized"
    request = await _request_of(client, second["workflow_id"])
    assert request.source == GitSource(url=url, ref="main", commit=second_commit)  # recorded in the run's history
    context = Path(second["context_path"]).read_text()
    assert f"Repository: `{url}@{second_commit}`" in context and "refunds.py" in context
    # an export names the commit: the asking host checks it out from its own mirror of the URL
    exported = await asyncio.to_thread(cli_host.run, "export", second["workflow_id"], "--json", "--out",
                                       str(cli_host.root / "cases"), "--gold", "src/budgetkit/refunds.py")
    assert exported.returncode == 0, exported.stderr[-3000:]
    case = json.loads(Path(json.loads(exported.stdout)["case_file"]).read_text())
    assert second_commit.startswith(case["commit"]) and case["gold_files"] == ["src/budgetkit/refunds.py"]
    git_cache = worker_host.root / "cache" / "durable-navigator" / "sources" / "git"
    assert len(list((git_cache / "mirrors").glob("*.git"))) == 1  # one mirror per URL, fetched into
    assert sorted(t.name for t in (git_cache / "trees").iterdir()) == sorted([first_commit, second_commit])


async def test_source_path_sends_the_path_to_workers_that_see_it(
    client: Client, task_queue: str, tmp_path: Path, s3_server: SeaweedS3
) -> None:
    """``--source path`` with an object store: no snapshot; the worker (same machine here, as a shared mount
    would make it) reads the tree at its path, and the pack comes home from the store as for a snapshot."""
    worker_host, cli_host = _hosts(tmp_path, s3_server, client, task_queue)
    repo = tmp_path / "mounted" / "app"
    shutil.copytree(FIXTURE_REPO, repo)
    ran = await asyncio.to_thread(cli_host.run, "explore", str(repo), GOAL, "--source", "path", "--detach", "--json",
                                  "--max-iterations", "3")
    wid = _started(ran)
    said = [line for line in ran.stderr.splitlines() if line.startswith("source: ")]
    assert said == [f"source: path {repo} (--source path: the workers of {client.service_client.config.target_host} "
                    "must see it at this path)"], ran.stderr
    request = await _request_of(client, wid)
    assert request.source == PathSource(path=str(repo))
    with worker_host.worker():
        await asyncio.to_thread(_wait_polling, worker_host)
        result = await _finished(client, wid)
    assert result.stop_reason.value == "finalized", result
    shown = await asyncio.to_thread(cli_host.run, "result", wid, "--json", "--out", str(cli_host.root / "out"))
    assert shown.returncode == 0, shown.stderr[-3000:]
    assert f"Repository: `{repo}`" in Path(json.loads(shown.stdout)["context_path"]).read_text()
