"""Issue #31: a batch's jobs travel as ``explore``'s runs do — a snapshot per repository with an object store,
a git commit for a git URL job, the path otherwise — so a fleet of hosts that share no disk can serve them.

A worker and a CLI run as separate hosts (own HOME, XDG dirs, cwd; tests/support/hosts.py) sharing only
Temporal and a real S3-compatible server (SeaweedFS). The CLI's repositories are moved away before the
worker starts: before this change every job named its path and failed on the worker ("not a folder").
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from temporalio.client import Client
from temporalio.service import RPCError

from durable_navigator.cli.batch_run import build_batch_request
from durable_navigator.cli.batch_sources import settle_batch_sources
from durable_navigator.cli.config import load_config
from durable_navigator.navcore.batch.batch import BatchRequest, BatchResult
from durable_navigator.navcore.investigation.investigation import InvestigationRequest
from durable_navigator.navcore.navigator.requests import ExplorationRequest
from durable_navigator.navcore.research.research import ResearchRequest
from durable_navigator.navcore.run.sources import GitSource, PathSource, SnapshotSource
from tests.support.cli import FIXTURE_REPO
from tests.support.hosts import Host, host_pair
from tests.support.seaweed import BUCKET, SeaweedS3

GOAL = "how is the token budget enforced?"
#: a cold worker on a loaded 2-core machine
POLLING_WITHIN_S = 60.0
_REQUESTS: dict[str, type[Any]] = {"explore": ExplorationRequest, "ask": ResearchRequest,
                                   "investigate": InvestigationRequest}


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
                               "GIT_COMMITTER_EMAIL": "t@example.com", "HOME": str(repo)}).stdout.strip()


def _origin(path: Path) -> str:
    """A git repository of the fixture tree on branch ``main``; its ``file://`` URL."""
    shutil.copytree(FIXTURE_REPO, path)
    _git(path, "init", "-q", "-b", "main")
    _git(path, "add", "-A")
    _git(path, "commit", "-q", "-m", "first")
    return f"file://{path}"


def _wait_polling(host: Host) -> None:
    deadline = time.monotonic() + POLLING_WITHIN_S
    while "worker polling" not in host.log():
        assert time.monotonic() < deadline, host.log()[-3000:]
        time.sleep(0.3)


async def _child_request(client: Client, wid: str, kind: str) -> Any:
    """The input the batch started child ``wid`` with, as recorded in its history."""
    history = await client.get_workflow_handle(wid).fetch_history()
    payloads = history.events[0].workflow_execution_started_event_attributes.input.payloads
    [request] = await client.data_converter.decode(payloads, [_REQUESTS[kind]])
    return request


def _bucket_keys(s3: SeaweedS3, prefix: str) -> list[str]:
    listed = s3.client().list_objects_v2(Bucket=BUCKET, Prefix=f"{prefix}/")
    return [o["Key"] for o in listed.get("Contents", [])]


async def _not_started(client: Client, wid: str) -> bool:
    try:
        await client.get_workflow_handle(wid).describe()
    except RPCError:
        return True
    return False


async def test_bad_sources_are_one_line_each_and_nothing_is_uploaded_or_started(
    client: Client, task_queue: str, tmp_path: Path, s3_server: SeaweedS3
) -> None:
    prefix = f"batchsrc-{uuid.uuid4().hex[:8]}"
    cli_host = Host.create(tmp_path / "cli-host", s3_server, client.service_client.config.target_host, task_queue,
                           prefix)
    url = _origin(tmp_path / "origin")
    shutil.copytree(FIXTURE_REPO, cli_host.root / "cwd" / "good")
    jobs = {"total_budget_usd": 1, "jobs": [
        {"repo": "good", "goal": GOAL},
        {"repo": "missing", "goal": GOAL},
        {"repo": url, "ref": "nope", "goal": GOAL},
        {"repo": "good", "ref": "main", "goal": GOAL},
    ]}
    (cli_host.root / "cwd" / "jobs.yaml").write_text(yaml.safe_dump(jobs, sort_keys=False))
    batch_id = f"bad-{uuid.uuid4().hex[:8]}"
    # --no-check-repos cannot skip the path check: with an object store the batch uploads each tree from here
    ran = await asyncio.to_thread(cli_host.run, "batch", "run", "jobs.yaml", "--detach", "--id", batch_id,
                                  "--no-check-repos")
    assert ran.returncode == 2, ran.stderr
    lines = ran.stderr.strip().splitlines()
    assert len(lines) == 4, ran.stderr  # the count, then one line per problem
    assert "job 1 (line 5) field 'repo'" in lines[1] and "uploads each repository" in lines[1]
    assert "job 2 (line 8) field 'ref'" in lines[2] and "ref: nope is not a branch or tag of" in lines[2]
    assert "(branches: main)" in lines[2]
    assert "job 3 (line 11) field 'ref'" in lines[3] and "is a path; drop ref" in lines[3]
    assert _bucket_keys(s3_server, prefix) == []  # nothing uploaded
    assert await _not_started(client, batch_id)


async def test_a_batch_reaches_a_worker_that_cannot_read_its_paths(
    client: Client, task_queue: str, tmp_path: Path, s3_server: SeaweedS3
) -> None:
    prefix, worker_host, cli_host = host_pair(
        tmp_path, s3_server, client.service_client.config.target_host, task_queue, "batchsrc")
    cwd = cli_host.root / "cwd"
    repo_a, repo_b = cwd / "app-a", cwd / "app-b"
    shutil.copytree(FIXTURE_REPO, repo_a)
    shutil.copytree(FIXTURE_REPO, repo_b)
    (repo_b / "src" / "budgetkit" / "refunds.py").write_text("def refund(ledger, n):\n    return ledger - n\n")
    url = _origin(tmp_path / "origin")
    commit = _git(tmp_path / "origin", "rev-parse", "HEAD")
    (cwd / "jobs.yaml").write_text(
        "total_budget_usd: 2.00\nmax_concurrency: 2\n"
        "defaults: {model: offline, token_budget: 2048, max_iterations: 3}\njobs:\n"
        f"  - {{repo: app-a, goal: \"{GOAL}\", name: a-pack}}\n"
        "  - {repo: ./app-a, goal: \"where is the token budget checked?\", name: a-answer, kind: ask}\n"
        f"  - {{repo: app-b, goal: \"{GOAL}\", name: b-pack}}\n"
        f"  - {{repo: \"{url}\", ref: main, goal: \"{GOAL}\", name: git-pack}}\n")
    started = await asyncio.to_thread(cli_host.run, "batch", "run", "jobs.yaml", "--detach", "--json")
    assert started.returncode == 0, started.stderr[-3000:]
    batch_id = json.loads(started.stdout)["batch_id"]
    said = [line for line in started.stderr.splitlines() if line.startswith("source: ")]
    # one snapshot per distinct repository (app-a's two jobs share one), one git line
    assert [line.split()[1] for line in said] == ["git", "snapshot", "snapshot"], started.stderr
    assert f"of {repo_a}: 8 files" in said[1] and "uploaded 8 files" in said[1], said
    # the eight files app-b shares with app-a were sent once: only its own file goes up
    assert f"of {repo_b}: 9 files" in said[2] and "uploaded 1 files" in said[2], said
    # the trees leave: only the snapshots (and the git URL) can serve the jobs now
    repo_a.rename(tmp_path / "a-elsewhere")
    repo_b.rename(tmp_path / "b-elsewhere")
    with worker_host.worker():
        await asyncio.to_thread(_wait_polling, worker_host)
        done = await asyncio.wait_for(client.get_workflow_handle(batch_id, result_type=BatchResult).result(),
                                      timeout=400)
        requests = [await _child_request(client, o.workflow_id, o.kind) for o in done.outcomes]
    assert [(o.name, o.status.value) for o in done.outcomes] == [
        ("a-pack", "completed"), ("a-answer", "completed"), ("b-pack", "completed"), ("git-pack", "completed")]
    # the outcomes (results.jsonl, progress) name each repository as the user does
    assert [o.repo_path for o in done.outcomes] == [str(repo_a), str(repo_a), str(repo_b), f"{url}@{commit}"]
    sources = [r.source for r in requests]
    assert all(isinstance(s, SnapshotSource) for s in sources[:3]), sources
    assert sources[0] == sources[1] and sources[2].label == str(repo_b) and sources[0] != sources[2]
    assert sources[3] == GitSource(url=url, ref=commit, commit=commit)
    shown = await asyncio.to_thread(cli_host.run, "batch", "results", batch_id, "--json")
    assert shown.returncode == 0, shown.stderr[-3000:]
    rows = Path(json.loads(shown.stdout)["results_path"]).read_text()
    assert "snapshot:" not in rows and str(repo_b) in rows
    # the worker built each snapshot once, in its own cache
    trees = worker_host.root / "cache" / "durable-navigator" / "sources" / "snapshots" / "trees"
    assert sorted(t.name for t in trees.iterdir() if t.is_dir()) == sorted(
        {s.manifest_sha256 for s in sources[:3]})


@pytest.mark.parametrize("address", [None, "127.0.0.1:1"])
def test_without_an_object_store_a_batch_sends_its_paths_as_before(
    tmp_path: Path, address: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    body = f"temporal: {{address: '{address}'}}\n" if address else "{}\n"
    (tmp_path / "navigator.yaml").write_text(body)
    config = load_config(tmp_path / "navigator.yaml", env={}, cwd=tmp_path)
    (tmp_path / "jobs.yaml").write_text(f"jobs:\n  - {{repo: {FIXTURE_REPO}, goal: \"{GOAL}\"}}\n"
                                        f"  - {{repo: {FIXTURE_REPO}, goal: \"why?\", kind: ask}}\n")
    req = build_batch_request(tmp_path / "jobs.yaml", config=config, budget_usd="1", concurrency=None,
                              batch_id="b-1", out=tmp_path / "out")
    assert settle_batch_sources(config, req) is req
    payload = json.loads(req.model_dump_json())
    # a job's input is what it was before jobs could name a git ref or a snapshot
    assert [job["repo_path"] for job in payload["jobs"]] == [str(FIXTURE_REPO.resolve())] * 2
    assert "ref" not in payload["jobs"][0] and BatchRequest.model_validate(payload) == req
    child = ExplorationRequest(repo_path=req.jobs[0].repo_path, goal=GOAL)
    assert child.source == PathSource(path=str(FIXTURE_REPO.resolve()))
    err = capsys.readouterr().err
    # a cluster is told its workers must see the paths; the embedded default says nothing, as before
    assert ("must see them at these paths" in err) == (address is not None) and err.count("\n") <= 1
