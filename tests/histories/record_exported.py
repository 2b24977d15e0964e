"""Regenerate ``tests/histories/exported/``: histories written by ``navigator export``, as a user makes them.

Run from the repository root after a deliberate, replay-compatible workflow change (nothing has
been released: workflows change and these are re-recorded)::

    PYTHONPATH=. .venv/bin/python -m tests.histories.record_exported

It starts a local dev server and a worker (the offline model), builds the shop repository of the eval
tests in a temporary folder, runs ``navigator explore`` and ``navigator export`` through the CLI (the
same commands a user types, pointed at that server), and copies the case folder's ``history/*.json``
into ``exported/`` unchanged: the replay test reads them as they are.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "exported"

from tests.conftest import temporal_binary
from tests.support.batch import priced_activities
from tests.support.cli import invoke
from tests.support.evalrepo import make_eval_repo
from temporalio.testing import WorkflowEnvironment

from durable_navigator.workers.converter import DATA_CONVERTER
from durable_navigator.workers.worker import build_worker
from durable_navigator.workflows.navigator import NAVIGATOR_SEARCH_ATTRIBUTES

#: the run's workflow id (the file's name): stable, so a re-recording replaces the file
RUN_ID = "nav-exported-offline"
GOAL = "Make heavy parcels cost more to ship than light parcels do today"


def _cli(args: list[str], env: dict[str, str]) -> dict:
    result = invoke(args, env)
    if result.exit_code != 0:
        raise SystemExit(f"navigator {' '.join(args)} failed ({result.exit_code}): {result.stderr}")
    return json.loads(result.stdout)


async def record(env: WorkflowEnvironment, tmp: Path) -> list[Path]:
    """Explore, export, and return the exported history files (in ``tmp``)."""
    tq = f"record-exported-{uuid.uuid4()}"
    (tmp / "navigator.yaml").write_text("{}\n")
    cli_env = {"TEMPORAL_ADDRESS": env.client.service_client.config.target_host, "NAVIGATOR_TASK_QUEUE": tq,
               "NAVIGATOR_CONFIG": str(tmp / "navigator.yaml"), "NAVIGATOR_CACHE_DIR": str(tmp / "cache"),
               **{f"XDG_{kind}_HOME": str(tmp / f"xdg-{kind.lower()}") for kind in ("STATE", "CACHE", "CONFIG", "DATA")}}
    repo = tmp / "shop"
    make_eval_repo(repo)
    async with build_worker(env.client, tq, activities=priced_activities(tmp)):
        await asyncio.to_thread(_cli, ["explore", str(repo), GOAL, "--tokens", "1024", "--id", RUN_ID, "--json",
                                       "--out", str(tmp / "runs")], cli_env)
        exported = await asyncio.to_thread(_cli, ["export", RUN_ID, "--out", str(tmp / "case"), "--json"], cli_env)
    return [Path(p) for p in exported["history_files"]]


async def main() -> None:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=temporal_binary(),
        data_converter=DATA_CONVERTER,
        search_attributes=NAVIGATOR_SEARCH_ATTRIBUTES,
    )
    try:
        with tempfile.TemporaryDirectory() as staging:
            os.environ.pop("TEMPORAL_ADDRESS", None)
            fresh = await record(env, Path(staging))  # a failed run leaves the committed files untouched
            OUT.mkdir(exist_ok=True)
            for old in OUT.glob("*.json"):
                old.unlink()
            for path in fresh:
                target = OUT / path.name
                target.write_bytes(path.read_bytes())
                print(f"wrote {target.relative_to(HERE.parents[1])} ({target.stat().st_size} B)")
    finally:
        await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
