"""Helpers of the investigation workflow tests: requests, scripts, runs against the dev server."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowHandle

from durable_navigator.navcore.investigation.investigation import (
    WORKER_PROFILE,
    InvestigationRequest,
    InvestigationResult,
)
from durable_navigator.navcore.batch.branches import BranchExploreRequest
from durable_navigator.navcore.navigator.requests import ExplorationRequest, ModelCallConfig
from durable_navigator.navcore.run.subagents import AgentProfile, ResearchCaps
from durable_navigator.workflows.investigation import InvestigationWorkflow

from tests.support import FIXTURE_REPO
from tests.support.research import USAGE, write_research_script

__all__ = ["INVESTIGATION_TIMEOUT", "GOAL", "OFFLINE_WORKER", "investigation_request", "start_investigation",
           "run_investigation", "branch_request", "js", "stage", "write_investigation_script", "FIXTURE_REPO"]

INVESTIGATION_TIMEOUT = timedelta(seconds=240)
GOAL = "how does the budget plugin record usage; where is the ledger checked?"
#: a small, fast offline worker (the parent may be scripted; its children stay offline)
OFFLINE_WORKER = WORKER_PROFILE.model_copy(update={
    "model": "offline", "caps": ResearchCaps(max_rounds=1, max_plan_steps=2, max_executor_turns=3, max_calls=30)})


def investigation_request(tmp_path: Path, **kw: Any) -> InvestigationRequest:
    """An investigation of the fixture repository (offline unless given)."""
    base: dict[str, Any] = dict(
        repo_path=str(FIXTURE_REPO), goal=GOAL, model="offline", budget_usd=Decimal("1"),
        out_dir=str(tmp_path / "out"), model_call=ModelCallConfig(max_attempts=1, initial_interval_s=0.1),
        worker=OFFLINE_WORKER,
    )
    base.update(kw)
    return InvestigationRequest(**base)


async def start_investigation(client: Client, task_queue: str, req: InvestigationRequest,
                              wf_id: str | None = None) -> WorkflowHandle:
    return await client.start_workflow(InvestigationWorkflow.run, req, id=wf_id or f"inv-{uuid.uuid4()}",
                                       task_queue=task_queue, execution_timeout=INVESTIGATION_TIMEOUT,
                                       memo={"goal": req.goal})


async def run_investigation(client: Client, task_queue: str, req: InvestigationRequest,
                            wf_id: str | None = None) -> InvestigationResult:
    handle = await start_investigation(client, task_queue, req, wf_id)
    return await handle.result()


def js(obj: Any) -> dict:
    """A scripted JSON answer with the test usage (1200 micro-USD at the test prices)."""
    return {"text": json.dumps(obj), "usage": USAGE}


def stage(title: str, *criteria: str, task: str | None = None, **extra: Any) -> dict:
    """A planned stage as the plan maker writes it."""
    return {"title": title, "task": task or title, "criteria": list(criteria), **extra}


def write_investigation_script(path: Path, text: dict[str, list[Any]]) -> str:
    """A ``scripted:`` file answering investigation kinds; returns the model name."""
    return write_research_script(path, text)


def worker_profile(name: str = "stage-worker", **kw: Any) -> AgentProfile:
    """A worker profile (offline unless ``model`` is given)."""
    return OFFLINE_WORKER.model_copy(update={"name": name, **kw})


def branch_request(tmp_path: Path, branches: int = 2) -> BranchExploreRequest:
    """An offline exploration of the fixture repository, forked ``branches`` ways."""
    return BranchExploreRequest(branches=branches, exploration=ExplorationRequest(
        repo_path=str(FIXTURE_REPO), goal="why does the budget plugin double-count tokens?", model="offline",
        budget_usd=Decimal("1"), token_budget=1500, max_iterations=4, out_dir=str(tmp_path / "out"),
        model_call=ModelCallConfig(max_attempts=1, initial_interval_s=0.1)))
