"""A full navigator worker (navigator + batch) in its own process, for kill/restart tests.

Usage: ``python rel_worker.py TARGET TASK_QUEUE ARTIFACT_DIR DELAY_S``. Models
are the real providers (``offline``, ``scripted:<file>``) priced by the batch
test table; every decision waits ``DELAY_S`` (heartbeating) so a test can kill
the process while decisions are in flight. Prints ``worker ready`` once polling.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE.parent / "batch"))
sys.path.insert(0, str(HERE.parent / "workflows"))

from batch_support import PRICES  # noqa: E402
from nav_support import engine_factory, token_counter  # noqa: E402
from temporalio.client import Client  # noqa: E402

from durable_navigator.activities.artifacts import LocalArtifactStore  # noqa: E402
from durable_navigator.activities.models.base import DecideCall, ModelProvider  # noqa: E402
from durable_navigator.activities.models.registry import TablePricer, build_provider  # noqa: E402
from durable_navigator.activities.navigator import NavigatorActivities  # noqa: E402
from durable_navigator.navcore.decision import ModelDecision  # noqa: E402
from durable_navigator.workers.converter import DATA_CONVERTER  # noqa: E402
from durable_navigator.workers.logging import configure_logging  # noqa: E402
from durable_navigator.workers.worker import build_worker  # noqa: E402


class SlowProvider:
    """Delegates to the real provider after ``delay_s`` (heartbeating meanwhile)."""

    def __init__(self, inner: ModelProvider, delay_s: float) -> None:
        self.inner, self.delay_s = inner, delay_s

    def handles(self, model: str) -> bool:
        return self.inner.handles(model)

    async def decide(self, call: DecideCall) -> ModelDecision:
        call.heartbeat(f"slow model, step {call.iteration}")
        await asyncio.sleep(self.delay_s)
        return await self.inner.decide(call)


async def main(target: str, task_queue: str, artifact_dir: str, delay_s: float) -> None:
    configure_logging(json_output=True, level="info")
    client = await Client.connect(target, data_converter=DATA_CONVERTER)
    acts = NavigatorActivities(
        LocalArtifactStore(artifact_dir),
        pricer=TablePricer(PRICES),
        provider_factory=lambda model: SlowProvider(build_provider(model), delay_s),
        engine_factory=engine_factory(),
        token_counter=token_counter(),
    )
    worker = build_worker(client, task_queue, activities=acts)
    print("worker ready", flush=True)
    await worker.run()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])))
