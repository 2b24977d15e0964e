"""An in-process worker that stops while its command runs: the command says so instead of waiting for ever.

Before, ``explore`` went on following a run nothing served: its in-process worker ran in a task of
its own and a worker that ended early (its start-up check failed, a fatal poll error) was only seen
when the command ended — which it never did ("waiting for a worker", until the test's timeout).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from temporalio.client import Client

from durable_navigator.cli import connect
from durable_navigator.cli.config import load_config
from durable_navigator.cli.errors import TemporalUnreachableError


async def test_a_command_whose_in_process_worker_stopped_fails_with_why(client: Client, tmp_path: Path) -> None:
    # a real reason for a real worker to stop at once: its start-up check finds no such namespace
    config = load_config(env={"TEMPORAL_ADDRESS": client.service_client.config.target_host,
                              "TEMPORAL_NAMESPACE": "no-such-namespace"}, cwd=tmp_path)
    started = time.monotonic()
    with pytest.raises(TemporalUnreachableError) as caught:
        async with connect.open_session(config, in_process_worker=True) as session:
            assert session.in_process_worker
            # stands for following a run that only this worker would serve
            await asyncio.wait_for(asyncio.sleep(600), timeout=120)
    assert time.monotonic() - started < connect.WORKER_LOST_GRACE_S + 30
    message = str(caught.value)
    assert "the in-process worker stopped (" in message and "no-such-namespace" in message, message
    assert "`navigator worker` finishes it" in message and "\n" not in message
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]  # no cancel left behind


async def test_a_cancelled_command_is_still_cancelled(client: Client, tmp_path: Path) -> None:
    """Ctrl-C (a cancel of the command) is not mistaken for a stopped worker."""
    config = load_config(env={"TEMPORAL_ADDRESS": client.service_client.config.target_host}, cwd=tmp_path)

    async def command() -> None:
        async with connect.open_session(config, in_process_worker=True):
            await asyncio.sleep(600)

    task = asyncio.ensure_future(command())
    await asyncio.sleep(2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, timeout=60)
