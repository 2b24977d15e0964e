"""Helpers of the research workflow tests: requests, scripts, runs against the dev server."""

from __future__ import annotations

import uuid
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml
from temporalio.client import Client, WorkflowHandle

from durable_navigator.navcore.requests import ModelCallConfig
from durable_navigator.navcore.research import ResearchRequest, ResearchResult
from durable_navigator.workflows.research import ResearchWorkflow

from tests.support import FIXTURE_REPO

__all__ = ["RESEARCH_TIMEOUT", "research_request", "start_research", "run_research", "write_research_script",
           "FIXTURE_REPO", "QUESTION"]

RESEARCH_TIMEOUT = timedelta(seconds=120)
QUESTION = "why does the budget plugin double-count tokens?"


def research_request(tmp_path: Path, **kw: Any) -> ResearchRequest:
    """A research request on the fixture repository (offline model unless given)."""
    base: dict[str, Any] = dict(
        repo_path=str(FIXTURE_REPO), question=QUESTION, model="offline", budget_usd=Decimal("1"),
        out_dir=str(tmp_path / "out"), model_call=ModelCallConfig(max_attempts=1, initial_interval_s=0.1),
    )
    base.update(kw)
    return ResearchRequest(**base)


async def start_research(client: Client, task_queue: str, req: ResearchRequest, wf_id: str | None = None) -> WorkflowHandle:
    return await client.start_workflow(ResearchWorkflow.run, req, id=wf_id or f"research-{uuid.uuid4()}",
                                       task_queue=task_queue, execution_timeout=RESEARCH_TIMEOUT,
                                       memo={"goal": req.question})


async def run_research(client: Client, task_queue: str, req: ResearchRequest, wf_id: str | None = None) -> ResearchResult:
    handle = await start_research(client, task_queue, req, wf_id)
    return await handle.result()


def write_research_script(path: Path, text: dict[str, list[Any]]) -> str:
    """A ``scripted:`` file answering research kinds from ``text``; returns the model name."""
    path.write_text(yaml.safe_dump({"text": text}, sort_keys=False))
    return f"scripted:{path}"
