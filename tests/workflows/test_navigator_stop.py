"""Stop stops: a model call in flight (turn, planning) is cancelled, booked, and the run finalizes in ~1 s.

A slow model (heartbeating every 0.2 s, as a streaming provider does) is
cancelled through Temporal activity cancellation when ``stop`` arrives; the
attempt reports what it had consumed and the ledger books it; a stop during a
retry backoff ends the wait at once.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid

import pytest
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal

from tests.support.navigator import FIXTURE_REPO, wait_for

from durable_navigator.activities.artifacts import LocalArtifactStore
from durable_navigator.activities.models.base import CallContext, ModelTransientError
from durable_navigator.activities.navigator import NavigatorActivities
from durable_navigator.activities.pricing_loader import TablePricer
from durable_navigator.navcore.run.decision import TokenUsage
from durable_navigator.navcore.navigator.messages import StopInput
from durable_navigator.navcore.model.model import ModelRequest, ModelResponse, ToolCallOut
from durable_navigator.navcore.model.pricing import PricingTable
from durable_navigator.navcore.navigator.requests import ExplorationRequest, ModelCallConfig
from durable_navigator.navcore.navigator.state import StopReason
from durable_navigator.workflows.navigator import NavigatorWorkflow

PRICER = TablePricer(PricingTable.from_mapping({"models": {"slow-model": {"input": 1, "output": 2}}}, "t"))
USAGE = TokenUsage(input_tokens=1000, output_tokens=0)


@dataclass
class SlowModel:
    """Hangs on the call kinds in ``hang`` (reporting its prompt as read), fails ``fail`` times first."""

    hang: set[str]
    fail: int = 0
    retry_after_s: float = 30.0
    #: answer turns with a flight-plan update instead of finalizing
    update: bool = False
    started: list[str] = field(default_factory=list)
    cancelled: list[str] = field(default_factory=list)

    async def request(self, req: ModelRequest, ctx: CallContext) -> ModelResponse:
        kind = req.task.kind
        self.started.append(kind)
        if self.fail:
            self.fail -= 1
            raise ModelTransientError("429 quota", USAGE, retry_after_s=self.retry_after_s)
        if kind in self.hang:
            ctx.meter.observe(USAGE)  # the backend has read the prompt
            try:
                while True:
                    ctx.heartbeat("still thinking")
                    await asyncio.sleep(0.2)
            except asyncio.CancelledError:
                self.cancelled.append(kind)
                raise
        if kind == "decide" and self.update:
            zoom = {"reasoning": "zoom", "updates": {"set_rules": [{"glob": "src/**", "level": 2}]}}
            return ModelResponse(tool_calls=[ToolCallOut(name="update_flight_plan", args=zoom)], usage=USAGE)
        if kind == "decide":
            return ModelResponse(tool_calls=[ToolCallOut(name="finalize_context", args={"summary": "s"})], usage=USAGE)
        return ModelResponse(text="DIRECT: one place", usage=USAGE)


async def _stop_during(client, task_queue, start_worker, tmp_path, model: SlowModel, planning: str,
                       ready) -> tuple[object, float]:
    acts = NavigatorActivities(LocalArtifactStore(tmp_path / "artifacts"), pricer=PRICER,
                               model_overrides={"slow-model": model})
    req = ExplorationRequest(repo_path=str(FIXTURE_REPO), goal="where is the ledger?", model="slow-model",
                             budget_usd=Decimal("1"), token_budget=1500, max_iterations=4,
                             out_dir=str(tmp_path / "out"), planning=planning,
                             model_call=ModelCallConfig(max_attempts=4, initial_interval_s=0.1))
    async with start_worker(acts):
        handle = await client.start_workflow(NavigatorWorkflow.run, req, id=f"stop-{uuid.uuid4()}",
                                             task_queue=task_queue, execution_timeout=timedelta(seconds=60))
        await ready(handle)
        sent = time.monotonic()
        await handle.signal(NavigatorWorkflow.stop, StopInput(sender="t", reason="enough"))
        result = await handle.result()
        return result, time.monotonic() - sent


async def _model_running(model: SlowModel, kind: str) -> None:
    for _ in range(200):
        if kind in model.started:
            await asyncio.sleep(0.5)  # well inside the call
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"the {kind} call never started")


async def test_stop_cancels_a_turn_in_flight_books_it_and_finalizes(client, task_queue, start_worker, tmp_path,
                                                                   caplog) -> None:
    caplog.set_level(logging.WARNING, logger="temporalio.activity")
    model = SlowModel(hang={"decide"})
    result, took = await _stop_during(client, task_queue, start_worker, tmp_path, model, "off",
                                      lambda h: _model_running(model, "decide"))
    assert result.stop_reason is StopReason.STOPPED and took < 2.0, took
    assert model.cancelled == ["decide"]
    assert result.cost_micros == 1000 and result.usage.input_tokens == 1000  # what the cancelled call had read
    assert result.context_path and "Repository map" in open(result.context_path).read()
    # a stop is no failure: the worker's log shows no warning and no traceback for the cancelled call
    assert not [r for r in caplog.records if r.name == "temporalio.activity" and r.levelno >= logging.WARNING]


async def test_stop_cancels_a_planning_call_in_flight(client, task_queue, start_worker, tmp_path) -> None:
    model = SlowModel(hang={"planning.analyze"})
    result, took = await _stop_during(client, task_queue, start_worker, tmp_path, model, "auto",
                                      lambda h: _model_running(model, "planning.analyze"))
    assert result.stop_reason is StopReason.STOPPED and took < 2.0, took
    assert model.cancelled == ["planning.analyze"] and "decide" not in model.started
    assert result.cost_micros == 1000


async def test_stop_during_a_retry_backoff_ends_the_wait(client, task_queue, start_worker, tmp_path) -> None:
    model = SlowModel(hang=set(), fail=1, retry_after_s=30.0)  # the provider asks for 30 s before the next attempt

    async def backing_off(handle) -> None:
        await _model_running(model, "decide")

    result, took = await _stop_during(client, task_queue, start_worker, tmp_path, model, "off", backing_off)
    assert result.stop_reason is StopReason.STOPPED and took < 2.0, took
    assert model.started == ["decide"]  # no second attempt
    assert result.cost_micros == 1000  # the failed attempt's usage is booked
    await asyncio.sleep(0)


async def test_stop_of_a_turn_awaiting_its_verdict(client, task_queue, start_worker, tmp_path) -> None:
    """A stop while nothing is in flight (a turn waits for a human) finalizes at once."""
    model = SlowModel(hang=set(), update=True)
    acts = NavigatorActivities(LocalArtifactStore(tmp_path / "artifacts"), pricer=PRICER,
                               model_overrides={"slow-model": model})
    req = ExplorationRequest(repo_path=str(FIXTURE_REPO), goal="where is the ledger?", model="slow-model",
                             token_budget=1500, out_dir=str(tmp_path / "out"), planning="auto", mode="interactive")
    async with start_worker(acts):
        handle = await client.start_workflow(NavigatorWorkflow.run, req, id=f"stop-{uuid.uuid4()}",
                                             task_queue=task_queue, execution_timeout=timedelta(seconds=60))
        await wait_for(handle, lambda r: r.status == "awaiting_approval" and r.awaiting_kind == "turn")
        await handle.signal(NavigatorWorkflow.stop, StopInput(sender="t", reason="enough"))
        result = await handle.result()
    assert result.stop_reason is StopReason.STOPPED and result.iterations == 1


# the shutdown evicts the workflow: closing its coroutine must not make the run-log interceptor log
# outside the workflow's event loop (it did: an unraisable _NotInWorkflowEventLoopError)
@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
async def test_a_worker_shutting_down_mid_call_is_not_a_stop(client, task_queue, start_worker, tmp_path) -> None:
    """A worker that shuts down cancels its running attempts; that is nobody's stop. The attempt's
    usage is booked and the next attempt, on the next worker, finishes the run. (An MCP server whose
    agent died shut its in-process worker down, and its run ended 'stopped' with no reason.)"""
    first = SlowModel(hang={"decide"})
    second = SlowModel(hang=set())
    store = LocalArtifactStore(tmp_path / "artifacts")
    req = ExplorationRequest(repo_path=str(FIXTURE_REPO), goal="where is the ledger?", model="slow-model",
                             budget_usd=Decimal("1"), token_budget=1500, max_iterations=4,
                             out_dir=str(tmp_path / "out"), planning="off",
                             model_call=ModelCallConfig(max_attempts=4, initial_interval_s=0.1))
    async with start_worker(NavigatorActivities(store, pricer=PRICER, model_overrides={"slow-model": first})):
        handle = await client.start_workflow(NavigatorWorkflow.run, req, id=f"shutdown-{uuid.uuid4()}",
                                             task_queue=task_queue, execution_timeout=timedelta(seconds=90))
        await _model_running(first, "decide")
    assert first.cancelled == ["decide"]  # the shutdown cancelled the attempt in flight
    async with start_worker(NavigatorActivities(store, pricer=PRICER, model_overrides={"slow-model": second})):
        result = await handle.result()
    assert result.stop_reason is StopReason.FINALIZED, result.stop_detail
    assert second.started == ["decide"]
    assert result.cost_micros == 2000  # the cut attempt's prompt (booked) + the finishing one
