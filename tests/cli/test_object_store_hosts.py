"""Issue #31: a worker and a CLI on separate "hosts" (own HOME, XDG dirs, cwd) share only Temporal and S3.

The worker (``navigator worker``) and the CLI each have a navigator.yaml naming one bucket of a real
S3-compatible server (SeaweedFS); nothing else is shared. An offline exploration started detached
finishes with *no* file on the CLI's disk — the worker wrote none there, nor into its own tree —
and ``navigator result`` then writes ``context.md`` / ``report.json`` on the CLI's host from the
store, byte-identical to the stored blobs. A followed ``explore``, an ``ask`` and an ``investigate``
write their files the same way. Before, the worker wrote the pack under ``--out`` on *its* filesystem and the CLI
had no way to get it back.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from durable_navigator.navcore.navigator.requests import ExplorationResult
from durable_navigator.workers.worker import host_queue
from tests.support.cli import FIXTURE_REPO
from tests.support.e2e import NAVIGATOR, Sandbox
from tests.support.hosts import KEY_ENV, Host, host_pair
from tests.support.seaweed import BUCKET, SECRET_KEY, SeaweedS3

GOAL = "how is the token budget enforced?"
QUESTION = "where is the token budget checked?"
#: a cold worker on a loaded 2-core machine
POLLING_WITHIN_S = 60.0


def _hosts(tmp_path: Path, s3: SeaweedS3, client: Client, task_queue: str) -> tuple[Host, Host]:
    return host_pair(tmp_path, s3, client.service_client.config.target_host, task_queue, "hosts")[1:]


def _prefix_of(host: Host) -> str:
    return (host.root / "navigator.yaml").read_text().split(f"s3://{BUCKET}/")[1].split()[0]


def _wait_polling(host: Host) -> None:
    deadline = time.monotonic() + POLLING_WITHIN_S
    while "worker polling" not in host.log():
        assert time.monotonic() < deadline, host.log()[-3000:]
        time.sleep(0.3)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def test_results_come_home_from_a_worker_that_shares_no_disk(
    client: Client, task_queue: str, tmp_path: Path, s3_server: SeaweedS3
) -> None:
    worker_host, cli_host = _hosts(tmp_path, s3_server, client, task_queue)
    out = cli_host.root / "out"
    with worker_host.worker():
        await asyncio.to_thread(_wait_polling, worker_host)
        assert "artifacts: s3://navigator-artifacts/hosts-" in worker_host.log()
        started = await asyncio.to_thread(cli_host.run, "explore", str(FIXTURE_REPO), GOAL, "--detach", "--json",
                                          "--max-iterations", "4", "--out", str(out))
        assert started.returncode == 0, started.stderr[-3000:]
        wid = json.loads(started.stdout)["workflow_id"]
        handle = client.get_workflow_handle(wid, result_type=ExplorationResult)
        done = await asyncio.wait_for(handle.result(), timeout=240)
        # finished, and nothing on the asking host's disk yet: the worker wrote no file there ...
        assert not out.exists(), sorted(out.rglob("*"))
        # ... nor on its own (no result files, no local artifact directory: every blob went to the bucket)
        assert not [p for p in worker_host.files() if "artifacts" in p.parts or p.name in ("context.md",
                                                                                          "report.json")]
        shown = await asyncio.to_thread(cli_host.run, "result", wid, "--json")
        assert shown.returncode == 0, shown.stderr[-3000:]
        # a teammate on a third host reads the same run into a folder of theirs
        teammate = Host.create(tmp_path / "teammate-host", s3_server, cli_host.temporal_address, task_queue,
                               _prefix_of(cli_host))
        theirs = await asyncio.to_thread(teammate.run, "result", wid, "--json", "--out", str(teammate.root / "mine"))
        assert theirs.returncode == 0, theirs.stderr[-3000:]
        followed = await asyncio.to_thread(cli_host.run, "explore", str(FIXTURE_REPO), GOAL, "--json",
                                           "--max-iterations", "3", "--out", str(out))
        asked = await asyncio.to_thread(cli_host.run, "ask", str(FIXTURE_REPO), QUESTION, "--json",
                                        "--out", str(out))
        investigated = await asyncio.to_thread(cli_host.run, "investigate", str(FIXTURE_REPO), GOAL, "--json",
                                               "--out", str(out))
    assert done.stop_reason.value == "finalized", done
    result = json.loads(shown.stdout)
    context, report = Path(result["context_path"]), Path(result["report_path"])
    assert context == out / wid / "context.md" and report == out / wid / "report.json"
    assert _sha(context) == result["context_ref"]["sha256"] and _sha(report) == result["report_ref"]["sha256"]
    assert "## " in context.read_text()  # a real pack, not an empty file
    assert json.loads(report.read_text())["workflow_id"] == wid
    their_result = json.loads(theirs.stdout)
    assert their_result["context_path"] == str(teammate.root / "mine" / wid / "context.md")
    assert Path(their_result["context_path"]).read_bytes() == context.read_bytes()
    # the same bytes are in the bucket, under <prefix>/<namespace>/<aa>/<sha256>
    sha = result["context_ref"]["sha256"]
    listed = s3_server.client().list_objects_v2(Bucket=BUCKET, Prefix="hosts-")["Contents"]
    assert any(o["Key"].endswith(f"/default/{sha[:2]}/{sha}") for o in listed)
    # a followed explore and an ask write their files on the asking host too
    assert followed.returncode == 0, followed.stderr[-3000:]
    pack = json.loads(followed.stdout)
    assert _sha(Path(pack["context_path"])) == pack["context_ref"]["sha256"]
    assert asked.returncode == 0, asked.stderr[-3000:]
    answer = json.loads(asked.stdout)
    assert Path(answer["answer_path"]).read_text() == answer["answer"]
    assert _sha(Path(answer["report_path"])) == answer["report_ref"]["sha256"]
    assert investigated.returncode == 0, investigated.stderr[-3000:]
    report_md = json.loads(investigated.stdout)
    assert _sha(Path(report_md["report_path"])) == report_md["report_ref"]["sha256"]
    assert _sha(Path(report_md["report_json_path"])) == report_md["report_json_ref"]["sha256"]
    # the keys never reach the run's history or the worker's log
    history = json.dumps((await handle.fetch_history()).to_json_dict())
    assert SECRET_KEY not in history and SECRET_KEY not in worker_host.log()
    # `navigator worker` polls its own host queue: the run's renders followed its scan there
    started_by: dict[int, str] = {}
    scheduled: list[tuple[int, str, str]] = []
    async for e in handle.fetch_history_events():
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            a = e.activity_task_scheduled_event_attributes
            scheduled.append((e.event_id, a.activity_type.name, a.task_queue.name))
        elif e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            s = e.activity_task_started_event_attributes
            started_by[s.scheduled_event_id] = s.identity
    worker_id = next(started_by[i] for i, name, _ in scheduled if name == "navigator.scan")
    renders = {(queue, started_by[i]) for i, name, queue in scheduled if name == "navigator.render_map"}
    assert renders == {(host_queue(task_queue, worker_id), worker_id)}
    assert "NAV_S3_SECRET" in (cli_host.root / "navigator.yaml").read_text()
    assert not [p for p in cli_host.files() if "artifacts" in p.parts]  # the CLI kept no local artifact dir


@pytest.mark.parametrize(("drop", "message"), [
    ("NAV_S3_SECRET", "artifacts.secret_key_env names NAV_S3_SECRET, which is not set; export NAV_S3_SECRET"),
])
def test_a_worker_with_a_bad_store_setting_stops_before_polling(
    client: Client, task_queue: str, tmp_path: Path, s3_server: SeaweedS3, drop: str, message: str
) -> None:
    worker_host, cli_host = _hosts(tmp_path, s3_server, client, task_queue)
    ran = worker_host.run("worker", timeout=120, **{drop: ""})
    assert ran.returncode != 0
    assert message in ran.stderr and "Traceback" not in ran.stderr and "worker polling" not in ran.stderr
    # the CLI refuses a followed run the same way, before starting anything
    explored = cli_host.run("explore", str(FIXTURE_REPO), GOAL, "--out", str(cli_host.root / "out"), **{drop: ""})
    assert explored.returncode != 0 and message in explored.stderr, explored.stderr[-2000:]
    assert not (cli_host.root / "out").exists()


def test_the_in_process_worker_of_explore_uses_the_object_store(tmp_path: Path, s3_server: SeaweedS3) -> None:
    """No TEMPORAL_ADDRESS: ``explore`` starts its embedded server and in-process worker, which must
    write to the configured bucket too (not the local directory), and the command writes the files."""
    box = Sandbox.create(tmp_path)
    prefix = f"inproc-{uuid.uuid4().hex[:8]}"
    config = tmp_path / "navigator.yaml"
    config.write_text(config.read_text() + f"artifacts:\n  url: s3://{BUCKET}/{prefix}\n"
                      f"  endpoint_url: {s3_server.endpoint_url}\n  access_key_env: NAV_S3_ACCESS\n"
                      "  secret_key_env: NAV_S3_SECRET\n")
    out = tmp_path / "out"
    ran = subprocess.run([str(NAVIGATOR), "explore", str(FIXTURE_REPO), GOAL, "--json", "--max-iterations", "3",
                          "--out", str(out)], cwd=tmp_path, env={**box.env(), **KEY_ENV}, capture_output=True,
                         text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr[-3000:]
    result = json.loads(ran.stdout)
    assert _sha(Path(result["context_path"])) == result["context_ref"]["sha256"]
    assert not (tmp_path / "xdg-cache" / "durable-navigator" / "artifacts").exists()  # nothing kept locally
    sha = result["context_ref"]["sha256"]
    listed = s3_server.client().list_objects_v2(Bucket=BUCKET, Prefix=f"{prefix}/default/")["Contents"]
    assert any(o["Key"] == f"{prefix}/default/{sha[:2]}/{sha}" for o in listed)
