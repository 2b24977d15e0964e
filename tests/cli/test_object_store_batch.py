"""Issue #31: ``navigator batch`` and ``navigator eval`` with a worker on another "host" (own HOME, XDG dirs,
cwd) that shares only Temporal and a real S3-compatible server (SeaweedFS) with the command that asked.

A detached batch (an exploration and a research question) finishes with nothing on the asking host's disk
and no result file on the worker's: the worker stored every file in the bucket. ``batch results`` then writes
``results.jsonl``, ``summary.json`` and each job's files on the asking host, byte-identical to the stored
blobs. ``navigator eval`` scores the packs read from the bucket and writes every run's files on the asking
host. Before, the worker wrote the batch's files under ``--out`` on *its* filesystem, and the eval read each
``context.md`` from a path only the worker's disk could have held (every exploration scored as failed).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from pathlib import Path

from temporalio.client import Client

from durable_navigator.navcore.batch.batch import BatchResult
from tests.support.cli import FIXTURE_REPO
from tests.support.evalrepo import make_eval_repo
from tests.support.hosts import Host, host_pair
from tests.support.seaweed import BUCKET, SeaweedS3

#: a cold worker on a loaded 2-core machine
POLLING_WITHIN_S = 60.0
RESULT_FILES = ("context.md", "report.json", "answer.md", "results.jsonl", "summary.json")


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _wait_polling(host: Host) -> None:
    deadline = time.monotonic() + POLLING_WITHIN_S
    while "worker polling" not in host.log():
        assert time.monotonic() < deadline, host.log()[-3000:]
        time.sleep(0.3)


def _result_files(host: Host) -> list[Path]:
    """What the host's processes wrote that is a result file or a local artifact blob."""
    return [p for p in host.files() if "artifacts" in p.parts or p.name in RESULT_FILES]


def _check_came_home(result: dict, out: Path) -> None:
    """Every file the batch names is on this host, under ``out``, with the bytes of its stored blob."""
    batch_id = result["batch_id"]
    assert result["results_path"] == str(out / batch_id / "results.jsonl")
    assert _sha(Path(result["results_path"])) == result["results_ref"]["sha256"]
    assert _sha(Path(result["summary_path"])) == result["summary_ref"]["sha256"]
    lines = [json.loads(line) for line in Path(result["results_path"]).read_text().splitlines()]
    assert [row["status"] for row in lines] == ["completed"] * len(result["outcomes"])
    for job in result["outcomes"]:
        for path, ref in (("context_path", "context_ref"), ("report_path", "report_ref")):
            assert Path(job[path]).parent == out / batch_id / job["workflow_id"], job
            assert _sha(Path(job[path])) == job[ref]["sha256"], job


async def test_batch_and_eval_results_come_home_from_a_worker_that_shares_no_disk(
    client: Client, task_queue: str, tmp_path: Path, s3_server: SeaweedS3
) -> None:
    prefix, worker_host, cli_host = host_pair(
        tmp_path, s3_server, client.service_client.config.target_host, task_queue, "batch")
    jobs = cli_host.root / "cwd" / "jobs.yaml"
    jobs.write_text(
        "total_budget_usd: 1.00\ndefaults: {model: offline, token_budget: 2048, max_iterations: 4}\njobs:\n"
        f"  - {{repo: {FIXTURE_REPO}, goal: \"how is the token budget enforced?\", name: pack}}\n"
        f"  - {{repo: {FIXTURE_REPO}, goal: \"where is the token budget checked?\", name: answer, kind: ask}}\n")
    repo = cli_host.root / "shop"
    make_eval_repo(repo)
    out, ev = cli_host.root / "out", cli_host.root / "ev"
    with worker_host.worker():
        await asyncio.to_thread(_wait_polling, worker_host)
        started = await asyncio.to_thread(cli_host.run, "batch", "run", str(jobs), "--detach", "--json",
                                          "--out", str(out))
        assert started.returncode == 0, started.stderr[-3000:]
        batch_id = json.loads(started.stdout)["batch_id"]
        assert started.stderr.count("source: snapshot ") == 1, started.stderr  # two jobs, one repository
        done = await asyncio.wait_for(client.get_workflow_handle(batch_id, result_type=BatchResult).result(),
                                      timeout=300)
        # finished, and nothing on the asking host's disk: the worker wrote no file there, nor on its own
        assert not out.exists(), sorted(out.rglob("*"))
        assert not _result_files(worker_host), _result_files(worker_host)
        shown = await asyncio.to_thread(cli_host.run, "batch", "results", batch_id, "--json")
        evaluated = await asyncio.to_thread(cli_host.run, "eval", str(repo), "--tasks", "2", "--tokens", "1024",
                                            "--out", str(ev), timeout=480)
    assert [o.status.value for o in done.outcomes] == ["completed", "completed"], done.outcomes
    assert shown.returncode == 0, shown.stderr[-3000:]
    result = json.loads(shown.stdout)
    _check_came_home(result, out)
    answer = next(job for job in result["outcomes"] if job["kind"] == "ask")
    assert Path(answer["context_path"]).name == "answer.md" and Path(answer["context_path"]).read_text().strip()
    # the eval: every exploration scored from the bucket, none failed; its runs' files written here
    assert evaluated.returncode == 0, (evaluated.stdout[-2000:], evaluated.stderr[-3000:])
    # each task's checkout went up as a snapshot (one per checkout), not as a path only this host has
    assert evaluated.stderr.count("source: snapshot ") == 2, evaluated.stderr[-3000:]
    report = json.loads((ev / "eval.json").read_text())
    nav = [s for task in report["tasks"] for s in task["scores"] if s["method"] == "navigator:offline"]
    assert len(nav) == 2 and all(s["status"] == "completed" and s["tokens"] > 0 for s in nav), nav
    packs = sorted((ev / "runs").glob("*/*/context.md"))
    assert len(packs) == 2 and len(list((ev / "runs").glob("*/results.jsonl"))) == 1
    rows = [json.loads(line) for line in next((ev / "runs").glob("*/results.jsonl")).read_text().splitlines()]
    assert sorted(_sha(p) for p in packs) == sorted(row["context_ref"]["sha256"] for row in rows)
    # the worker kept nothing of either; the blobs are in the bucket under <prefix>/<namespace>/
    assert not _result_files(worker_host), _result_files(worker_host)
    listed = s3_server.client().list_objects_v2(Bucket=BUCKET, Prefix=f"{prefix}/default/")["Contents"]
    keys = {o["Key"].rsplit("/", 1)[1] for o in listed}
    assert {row["context_ref"]["sha256"] for row in rows} <= keys
    assert result["results_ref"]["sha256"] in keys
