"""``navigator gc`` against the local directory store and a real S3-compatible server (SeaweedFS).

A finished exploration's blobs are referenced by its history and survive every gc, however old they
are; an unreferenced blob goes only once it is older than ``--older-than``; ``--dry-run`` lists and
deletes nothing; the run's files can still be brought home afterwards. On S3, objects of another
namespace under the same prefix are never touched.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import uuid
from pathlib import Path

from temporalio.client import Client

from durable_navigator.activities.artifacts import LocalArtifactStore
from durable_navigator.cli.gc_run import _closure, parse_age
from durable_navigator.cli.errors import CliError
from tests.support.batch import priced_activities
from tests.support.cli import FIXTURE_REPO, ainvoke, json_of
from tests.support.hosts import Host, host_pair
from tests.support.seaweed import BUCKET, SeaweedS3

GOAL = "how is the token budget enforced?"
TEN_DAYS_S = 10 * 86400
#: a cold worker on a loaded 2-core machine
POLLING_WITHIN_S = 60.0


def _age(path: Path, seconds: float) -> None:
    stamp = time.time() - seconds
    os.utime(path, (stamp, stamp))


async def test_gc_of_the_local_store_keeps_what_runs_reference(eval_env: dict[str, str], start_worker,
                                                              tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path / "artifacts")  # the test worker's store, named in navigator.yaml
    async with start_worker(priced_activities(tmp_path)):
        run = json_of(await ainvoke(["explore", str(FIXTURE_REPO), GOAL, "--tokens", "1024", "--json",
                                     "--max-iterations", "3", "--out", str(tmp_path / "runs")]))
    used = {b.sha256 for b in store.blobs()}
    assert run["context_ref"]["sha256"] in used and run["map_ref"]["sha256"] in used
    old_orphan = store.put_bytes(b"nobody names me " + uuid.uuid4().bytes, "text/plain")
    new_orphan = store.put_bytes(b"nor me, but I am new " + uuid.uuid4().bytes, "text/plain")
    for blob in store.blobs():  # everything is old now but the new orphan
        if blob.sha256 != new_orphan.sha256:
            _age(store.root / blob.sha256[:2] / blob.sha256, TEN_DAYS_S)

    dry = json_of(await ainvoke(["gc", "--dry-run", "--json"]))
    assert dry["unreferenced"] == [old_orphan.sha256] and dry["deleted"] == 0 and dry["recent"] == 1
    assert dry["runs"] >= 1 and store.exists(old_orphan)
    listed = await ainvoke(["gc", "--dry-run"])
    assert listed.exit_code == 0 and f"would delete {old_orphan.sha256}" in listed.stdout, listed.stdout
    done = json_of(await ainvoke(["gc", "--json"]))
    assert (done["deleted"], done["deleted_bytes"]) == (1, old_orphan.size)
    assert not store.exists(old_orphan) and store.exists(new_orphan)
    # the age guard off: the new orphan goes too; every blob of the run stays
    assert json_of(await ainvoke(["gc", "--older-than", "0s", "--json"]))["unreferenced"] == [new_orphan.sha256]
    assert {b.sha256 for b in store.blobs()} == used
    # the run's files still come home from the store
    again = json_of(await ainvoke(["result", run["workflow_id"], "--json", "--out", str(tmp_path / "again")]))
    assert Path(again["context_path"]).read_text() == Path(run["context_path"]).read_text()


def test_gc_refuses_a_bad_age_before_any_work(tmp_path: Path) -> None:
    try:
        parse_age("a week")
    except CliError as exc:
        assert "write a number and a unit: 7d, 12h, 30m or 0s" in str(exc)
    else:
        raise AssertionError("'a week' was taken as an age")
    assert parse_age("12h").total_seconds() == 43200 and parse_age("0s").total_seconds() == 0


def test_blobs_named_inside_referenced_blobs_are_referenced(tmp_path: Path) -> None:
    """A stored request names the one before it: the chain is kept from its newest link."""
    store = LocalArtifactStore(tmp_path / "artifacts")
    first = store.put_bytes(b'{"messages": []}', "application/json")
    second = store.put_bytes(json.dumps({"previous_ref": first.model_dump()}).encode(), "application/json")
    loose = store.put_bytes(b"loose", "text/plain")
    present = {b.sha256: b for b in store.blobs()}
    assert _closure(store, [second.sha256, "0" * 64], present) == {first.sha256, second.sha256}
    assert loose.sha256 in present


def _wait_polling(host: Host) -> None:
    deadline = time.monotonic() + POLLING_WITHIN_S
    while "worker polling" not in host.log():
        assert time.monotonic() < deadline, host.log()[-3000:]
        time.sleep(0.3)


async def test_gc_of_an_s3_bucket_keeps_what_runs_reference(client: Client, task_queue: str, tmp_path: Path,
                                                           s3_server: SeaweedS3) -> None:
    prefix, worker_host, cli_host = host_pair(
        tmp_path, s3_server, client.service_client.config.target_host, task_queue, "gc")
    s3 = s3_server.client()
    with worker_host.worker():
        await asyncio.to_thread(_wait_polling, worker_host)
        ran = await asyncio.to_thread(cli_host.run, "explore", str(FIXTURE_REPO), GOAL, "--json",
                                      "--max-iterations", "3", "--out", str(cli_host.root / "out"))
    assert ran.returncode == 0, ran.stderr[-3000:]
    run = json.loads(ran.stdout)

    def keys(under: str) -> set[str]:
        return {o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix=under).get("Contents", [])}

    used = keys(f"{prefix}/default/")
    orphan = "ab" + uuid.uuid4().hex + uuid.uuid4().hex[:30]
    s3.put_object(Bucket=BUCKET, Key=f"{prefix}/default/{orphan[:2]}/{orphan}", Body=b"nobody names me")
    theirs = f"{prefix}/other-namespace/{orphan[:2]}/{orphan}"
    s3.put_object(Bucket=BUCKET, Key=theirs, Body=b"another namespace's")

    guarded = await asyncio.to_thread(cli_host.run, "gc", "--json")
    assert guarded.returncode == 0, guarded.stderr[-3000:]
    kept = json.loads(guarded.stdout)
    assert kept["unreferenced"] == [] and kept["recent"] == 1 and kept["store"].endswith(f"{prefix}/default at "
                                                                                        f"{s3_server.endpoint_url}")
    dry = await asyncio.to_thread(cli_host.run, "gc", "--older-than", "0s", "--dry-run", "--json")
    assert json.loads(dry.stdout)["unreferenced"] == [orphan] and orphan in "".join(keys(f"{prefix}/default/"))
    done = await asyncio.to_thread(cli_host.run, "gc", "--older-than", "0s", "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["deleted"] == 1, done.stderr[-3000:]
    assert keys(f"{prefix}/default/") == used and theirs in keys(f"{prefix}/")
    again = await asyncio.to_thread(cli_host.run, "result", run["workflow_id"], "--json", "--out",
                                    str(cli_host.root / "again"))
    assert again.returncode == 0, again.stderr[-3000:]
    assert Path(json.loads(again.stdout)["context_path"]).read_bytes() == Path(run["context_path"]).read_bytes()


async def test_gc_deletes_nothing_when_temporal_refuses_to_list_the_runs(eval_env: dict[str, str],
                                                                       tmp_path: Path) -> None:
    """Runs Temporal cannot show may be the ones naming a blob: an RPC error ends gc, one line, exit 3.

    Before: the RPCError of an unreadable namespace came out as a traceback (exit 1).
    """
    store = LocalArtifactStore(tmp_path / "artifacts")
    orphan = store.put_bytes(b"maybe someone names me " + uuid.uuid4().bytes, "text/plain")
    _age(store.root / orphan.sha256[:2] / orphan.sha256, TEN_DAYS_S)
    refused = await ainvoke(["gc", "--older-than", "0s"], {**eval_env, "TEMPORAL_NAMESPACE": "no-such-namespace"})
    assert refused.exit_code == 3, (refused.exit_code, refused.stdout, refused.stderr)
    assert refused.stderr.count("\n") == 1 and "nothing was deleted" in refused.stderr, refused.stderr
    assert store.exists(orphan)
