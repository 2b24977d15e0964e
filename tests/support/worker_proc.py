"""A navigator worker in its own process, for kill/restart tests.

Usage: ``python -m tests.support.worker_proc TARGET TASK_QUEUE ARTIFACT_DIR DELAY_S``. It
runs until killed; the scripted model zooms in each step and finalizes at 6.
"""

from __future__ import annotations

import asyncio
import sys


from tests.support.navigator import ZOOM_BUDGET, ZOOM_OUT_CLI, ScriptProvider, engine_factory, make_pricer, token_counter
from temporalio.client import Client

from durable_navigator.activities.artifacts import LocalArtifactStore
from durable_navigator.activities.navigator import NavigatorActivities
from durable_navigator.workers.converter import DATA_CONVERTER
from durable_navigator.workers.worker import build_worker

KILL_TEST_STEPS = [ZOOM_BUDGET, ZOOM_OUT_CLI] * 3


async def main(target: str, task_queue: str, artifact_dir: str, delay_s: float) -> None:
    client = await Client.connect(target, data_converter=DATA_CONVERTER)
    provider = ScriptProvider(steps=KILL_TEST_STEPS, delay_s=delay_s)
    acts = NavigatorActivities(
        LocalArtifactStore(artifact_dir),
        pricer=make_pricer(),
        model_overrides={"test-model": provider},
        engine_factory=engine_factory(),
        token_counter=token_counter(),
    )
    worker = build_worker(client, task_queue, activities=acts)
    print("worker ready", flush=True)
    await worker.run()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])))
