"""A full navigator worker (navigator + batch) in its own process, for kill/restart tests.

Usage: ``python -m tests.support.rel_worker TARGET TASK_QUEUE ARTIFACT_DIR DELAY_S``. Models
are the real providers (``offline``, ``scripted:<file>``) priced by the batch
test table; every decision waits ``DELAY_S`` (heartbeating) so a test can kill
the process while decisions are in flight. Prints ``worker ready`` once polling.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

from tests.support.batch import PRICES
from tests.support.navigator import engine_factory, token_counter
from temporalio.client import Client

from durable_navigator.activities.artifacts import LocalArtifactStore
from durable_navigator.activities.models.base import CallContext, Model
from durable_navigator.activities.models.registry import ModelRegistry
from durable_navigator.activities.navigator import NavigatorActivities
from durable_navigator.activities.pricing_loader import TablePricer
from durable_navigator.navcore.model.model import ModelRequest, ModelResponse
from durable_navigator.workers.converter import DATA_CONVERTER
from durable_navigator.workers.logging import configure_logging
from durable_navigator.workers.worker import build_worker


class SlowModel:
    """Delegates to the real model after ``delay_s`` (heartbeating meanwhile)."""

    def __init__(self, inner: Model, delay_s: float) -> None:
        self.inner, self.delay_s = inner, delay_s

    async def request(self, req: ModelRequest, ctx: CallContext) -> ModelResponse:
        ctx.heartbeat(f"slow model, {req.task.kind} {req.task.index}")
        await asyncio.sleep(self.delay_s)
        return await self.inner.request(req, ctx)


class SlowRegistry:
    """The worker's real registry, every model slowed down."""

    def __init__(self, inner: ModelRegistry, delay_s: float) -> None:
        self.inner, self.delay_s = inner, delay_s
        self.spec, self.check = inner.spec, inner.check

    def model(self, model: str) -> Model:
        return SlowModel(self.inner.model(model), self.delay_s)


async def main(target: str, task_queue: str, artifact_dir: str, delay_s: float) -> None:
    configure_logging(json_output=True, level="info")
    client = await Client.connect(target, data_converter=DATA_CONVERTER)
    acts = NavigatorActivities(
        LocalArtifactStore(artifact_dir),
        pricer=TablePricer(PRICES),
        engine_factory=engine_factory(),
        token_counter=token_counter(),
    )
    acts.models = SlowRegistry(acts.models, delay_s)  # type: ignore[assignment]
    worker = build_worker(client, task_queue, activities=acts)
    print("worker ready", flush=True)
    await worker.run()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])))
