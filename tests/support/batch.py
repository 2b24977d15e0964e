"""Helpers of the batch tests: real activities with priced scripted/offline models.

The scripted model (``scripted:<file>``) is the real provider reading a real
file; only its price differs from the shipped table (which prices it at 0), so
budget arithmetic is visible: $1 / $2 per million input / output tokens.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml
from tests.support.navigator import FIXTURE_REPO, engine_factory, token_counter
from temporalio.client import Client, WorkflowHandle

from durable_navigator.activities.artifacts import LocalArtifactStore
from durable_navigator.activities.pricing_loader import TablePricer
from durable_navigator.activities.navigator import NavigatorActivities
from durable_navigator.navcore.batch.batch import BatchJob, BatchLimits, BatchRequest, BatchResult
from durable_navigator.navcore.model.pricing import PricingTable
from durable_navigator.workflows.batch import BatchWorkflow

__all__ = [
    "FIXTURE_REPO",
    "BATCH_TIMEOUT",
    "priced_activities",
    "write_script",
    "job",
    "batch_request",
    "start_batch",
]

BATCH_TIMEOUT = timedelta(seconds=120)

PRICES = PricingTable.from_mapping(
    {
        "models": {
            "scripted": {"input": Decimal("1"), "output": Decimal("2")},
            "offline": {"input": Decimal("0"), "output": Decimal("0")},
        }
    },
    "batch tests",
)


def priced_activities(tmp_path: Path) -> NavigatorActivities:
    """Navigator activities with the real providers, test prices and a tmp artifact store."""
    return NavigatorActivities(
        LocalArtifactStore(tmp_path / "artifacts"),
        pricer=TablePricer(PRICES),
        engine_factory=engine_factory(),
        token_counter=token_counter(),
    )


def write_script(path: Path, steps: int, input_tokens: int = 1000, output_tokens: int = 100) -> str:
    """A scripted decision file: ``steps`` zoom-ins then finalize; returns ``scripted:<path>``."""
    usage = {"input_tokens": input_tokens, "output_tokens": output_tokens}
    decisions: list[dict[str, Any]] = [
        {
            "action": "update_flight_plan",
            "reasoning": f"zoom step {i}",
            "updates": {"set_rules": [{"glob": "src/budgetkit/**", "level": 2 + (i % 3)}]},
            "usage": usage,
        }
        for i in range(steps)
    ]
    decisions.append({"action": "finalize_context", "summary": "the plugin double-counts", "usage": usage})
    path.write_text(yaml.safe_dump({"decisions": decisions}))
    return f"scripted:{path}"


def job(index: int, model: str, repo: Path | str = FIXTURE_REPO, **kw: Any) -> BatchJob:
    """A resolved batch job on the fixture repository."""
    base: dict[str, Any] = dict(
        index=index,
        name=f"job-{index}",
        repo_path=str(repo),
        goal=f"why does the budget plugin double-count tokens? (job {index})",
        model=model,
        token_budget=1500,
        max_iterations=6,
        max_output_tokens=256,
    )
    base.update(kw)
    return BatchJob(**base)


def batch_request(tmp_path: Path, jobs: list[BatchJob], **kw: Any) -> BatchRequest:
    """A batch request writing under ``tmp_path/out``."""
    base: dict[str, Any] = dict(
        batch_id=f"batch-{uuid.uuid4().hex[:12]}",
        jobs=jobs,
        total_budget_usd=Decimal("1"),
        max_concurrency=2,
        out_dir=str(tmp_path / "out"),
        limits=BatchLimits(job_timeout_s=90),
    )
    base.update(kw)
    return BatchRequest(**base)


async def start_batch(client: Client, task_queue: str, req: BatchRequest) -> WorkflowHandle[Any, BatchResult]:
    """Start the batch under its own id (the id the CLI would use)."""
    return await client.start_workflow(
        BatchWorkflow.run, req, id=req.batch_id, task_queue=task_queue, execution_timeout=BATCH_TIMEOUT
    )
