"""The real model registry, pricing table and engine behind the navigator workflow."""

from __future__ import annotations

import uuid
from datetime import timedelta
from decimal import Decimal

import pytest
from tests.support.navigator import FIXTURE_REPO
from temporalio.client import WorkflowFailureError

from durable_navigator.activities.artifacts import LocalArtifactStore
from durable_navigator.activities.pricing_loader import TablePricer
from durable_navigator.activities.models.offline import OfflineModel
from durable_navigator.activities.models.registry import ModelRegistry
from durable_navigator.activities.navigator import NavigatorActivities
from durable_navigator.navcore.run.decision import TokenUsage
from durable_navigator.navtypes.errors import BudgetError, ModelError
from durable_navigator.navcore.navigator.requests import ExplorationRequest
from durable_navigator.navcore.navigator.state import StopReason
from durable_navigator.workflows.navigator import NavigatorWorkflow


def test_registry_refuses_unknown_models_and_prices() -> None:
    registry = ModelRegistry(engines=lambda root: None)
    with pytest.raises(ModelError, match="unknown model 'gpt-4'"):
        registry.model("gpt-4")
    assert isinstance(registry.model("offline"), OfflineModel)
    assert registry.spec("models/gemini-2.5-flash").model == "gemini-2.5-flash"
    pricer = TablePricer.load()
    with pytest.raises(BudgetError, match="has no price"):
        pricer.estimate("gemini-9-imaginary", 10, 10)
    assert pricer.cost("offline", TokenUsage(input_tokens=10_000, output_tokens=500)) == 0
    flash = pricer.cost("gemini-2.5-flash", TokenUsage(input_tokens=1_000_000))
    assert flash == 300_000  # $0.30 per million input tokens


async def test_offline_model_end_to_end(client, task_queue, start_worker, tmp_path) -> None:
    acts = NavigatorActivities(LocalArtifactStore(tmp_path / "artifacts"), pricer=TablePricer.load())
    req = ExplorationRequest(
        repo_path=str(FIXTURE_REPO),
        goal="why does the budget plugin double-count tokens on streamed calls?",
        model="offline",
        token_budget=600,
        max_iterations=6,
        out_dir=str(tmp_path / "out"),
    )
    async with start_worker(acts):
        result = await client.execute_workflow(
            NavigatorWorkflow.run, req, id=f"nav-{uuid.uuid4()}", task_queue=task_queue,
            execution_timeout=timedelta(seconds=90),
        )
    assert result.stop_reason in (StopReason.FINALIZED, StopReason.MAX_ITERATIONS)
    assert result.iterations >= 1 and result.cost_usd == Decimal(0)
    assert result.map_metadata is not None and result.map_metadata.tokens_used <= 600
    assert "plugin.py" in open(result.context_path or "").read()


async def test_unknown_model_fails_before_any_call(client, task_queue, start_worker, tmp_path) -> None:
    acts = NavigatorActivities(LocalArtifactStore(tmp_path / "artifacts"), pricer=TablePricer.load())
    req = ExplorationRequest(repo_path=str(FIXTURE_REPO), goal="g", model="gpt-4", out_dir=str(tmp_path / "out"))
    async with start_worker(acts):
        with pytest.raises(WorkflowFailureError) as info:
            await client.execute_workflow(
                NavigatorWorkflow.run, req, id=f"nav-{uuid.uuid4()}", task_queue=task_queue,
                execution_timeout=timedelta(seconds=30),
            )
    assert "unknown model 'gpt-4'" in str(info.value.cause)
    assert not (tmp_path / "out").exists()
