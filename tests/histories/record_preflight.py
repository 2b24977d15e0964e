"""Regenerate the committed ``NavigatorPreflight`` history used by the replay tests.

Run from the repository root after a deliberate change to ``workflows/preflight.py``::

    PYTHONPATH=. .venv/bin/python -m tests.histories.record_preflight

One check of three models on a worker without Gemini credentials (``offline``
is fine, ``gemini-2.5-flash`` lacks a key, ``gpt-9`` is unknown); writes
``preflight_models.json``.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import uuid
from datetime import timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent

from tests.conftest import temporal_binary
from temporalio.testing import WorkflowEnvironment

from durable_navigator.navcore.model.preflight import PREFLIGHT_WORKFLOW, ModelCheckInput, ModelCheckResult
from durable_navigator.workers.converter import DATA_CONVERTER
from durable_navigator.workers.worker import build_activities, build_worker

MODELS = ["offline", "gemini-2.5-flash", "gpt-9"]


async def main() -> None:
    for key in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
        os.environ.pop(key, None)
    env = await WorkflowEnvironment.start_local(dev_server_existing_path=temporal_binary(), data_converter=DATA_CONVERTER)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            tq = f"record-preflight-{uuid.uuid4()}"
            async with build_worker(env.client, tq, activities=build_activities(Path(tmp))):
                handle = await env.client.start_workflow(
                    PREFLIGHT_WORKFLOW, ModelCheckInput(models=MODELS), id=f"preflight-{uuid.uuid4().hex[:12]}",
                    task_queue=tq, result_type=ModelCheckResult, execution_timeout=timedelta(seconds=30),
                )
                print(await handle.result())
                history = await handle.fetch_history()
        path = HERE / "preflight_models.json"
        path.write_text(history.to_json())
        print(f"wrote {path.relative_to(HERE.parents[1])} ({path.stat().st_size} B)")
    finally:
        await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
