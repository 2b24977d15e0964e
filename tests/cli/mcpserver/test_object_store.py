"""``navigator mcp`` on one "host", the worker on another; they share only Temporal and an S3 bucket (#31).

The worker writes no files with an object store, so the MCP server must hand its client the pack
and the report read from the bucket (before, it read the run's files or the *default local*
artifact directory, and said the pack was not readable here).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
import time
from pathlib import Path

from mcp import Client
from temporalio.client import Client as TemporalClient

from tests.support.cli import FIXTURE_REPO
from tests.support.hosts import Host, host_pair
from tests.support.mcp import stdio_params, texts
from tests.support.seaweed import SeaweedS3

GOAL = "why are tokens double-counted in budget enforcement?"
CALL_TIMEOUT_S = 240


def _wait_polling(host: Host, within_s: float = 60.0) -> None:
    deadline = time.monotonic() + within_s
    while "worker polling" not in host.log():
        assert time.monotonic() < deadline, host.log()[-3000:]
        time.sleep(0.3)


async def test_the_mcp_server_reads_a_remote_workers_pack_from_the_bucket(
    client: TemporalClient, task_queue: str, tmp_path: Path, s3_server: SeaweedS3
) -> None:
    prefix, worker_host, agent_host = host_pair(
        tmp_path, s3_server, client.service_client.config.target_host, task_queue, "mcp", second="agent-host")
    root = tmp_path / "allowed"
    repo = root / "budgetkit"
    shutil.copytree(FIXTURE_REPO, repo)
    out = agent_host.root / "packs"
    params = stdio_params(agent_host.env(), agent_host.root / "cwd", "--allow-root", str(root), "--out", str(out))
    with worker_host.worker():
        await asyncio.to_thread(_wait_polling, worker_host)
        async with Client(params, read_timeout_seconds=CALL_TIMEOUT_S) as mcp:
            result = await mcp.call_tool("explore", {"repo": str(repo), "goal": GOAL, "token_budget": 1500})
            assert not result.is_error, texts(result)
            found = result.structured_content
            pack = texts(result)[0]
            context = (await mcp.read_resource(found["context_uri"])).contents[0].text
            report = json.loads((await mcp.read_resource(found["report_uri"])).contents[0].text)
    assert pack.startswith(f"# Context: {GOAL}") and context == pack
    assert report["workflow_id"] == found["run_id"]
    assert not out.exists()  # no file anywhere on the agent's host: the text came from the bucket
    listed = s3_server.client().list_objects_v2(Bucket="navigator-artifacts", Prefix=f"{prefix}/")["Contents"]
    sha = hashlib.sha256(pack.encode("utf-8")).hexdigest()
    assert any(o["Key"] == f"{prefix}/default/{sha[:2]}/{sha}" for o in listed)
