"""Gemini error classification under a real Temporal dev server: Temporal owns the retries.

A throw-away workflow calls one activity that runs :class:`GeminiProvider`
over the scripted HTTP layer. 429/500 are retried by Temporal's policy (one
HTTP request per attempt, the SDK never retries); a 400 fails the activity on
its first attempt; the API key never reaches the workflow history.
"""

from __future__ import annotations

import json
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio import activity, workflow
from temporalio.client import Client, WorkflowFailureError
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from durable_navigator.activities.models.base import DecideCall
from durable_navigator.activities.models.gemini import GeminiConfig, GeminiCredentials, GeminiProvider
from durable_navigator.activities.models.testing import ScriptedGemini, error_reply, function_call_reply, usage_metadata
from durable_navigator.navcore.flightplan import FlightPlan

KEY = "AIzaTEST-temporal-key-7d1e0b"
ACTIVITY = "test.gemini_decide"


@workflow.defn(name="test.GeminiDecide", sandboxed=False)
class GeminiDecideWorkflow:
    """Calls the decide activity once with a short, explicit retry policy."""

    @workflow.run
    async def run(self, goal: str) -> dict[str, Any]:
        return await workflow.execute_activity(
            ACTIVITY,
            goal,
            start_to_close_timeout=timedelta(seconds=30),
            heartbeat_timeout=timedelta(seconds=10),
            retry_policy=RetryPolicy(
                maximum_attempts=4,
                initial_interval=timedelta(milliseconds=50),
                backoff_coefficient=1.0,
                non_retryable_error_types=["ModelError"],
            ),
            summary="decide · gemini-2.5-flash",
        )


def decide_activity(gemini: ScriptedGemini, attempts: list[int]) -> Any:
    provider = GeminiProvider(
        credentials=GeminiCredentials(api_key=KEY), transport=gemini.transport, config=GeminiConfig()
    )

    @activity.defn(name=ACTIVITY)
    async def decide(goal: str) -> dict[str, Any]:
        attempts.append(activity.info().attempt)
        call = DecideCall(
            model="gemini-2.5-flash",
            system_prompt="system",
            user_prompt=f"goal: {goal}",
            max_output_tokens=256,
            goal=goal,
            flight_plan=FlightPlan(),
            iteration=1,
            max_iterations=3,
            repo_root=Path("."),
            heartbeat=lambda note: activity.heartbeat(note),
        )
        decision = await provider.decide(call)
        return decision.model_dump(mode="json")

    return decide


async def run_workflow(client: Client, gemini: ScriptedGemini, attempts: list[int]) -> tuple[Any, str]:
    task_queue = f"test-gemini-{uuid.uuid4()}"
    workflow_id = f"gemini-{uuid.uuid4()}"
    async with Worker(
        client,
        task_queue=task_queue,
        workflows=[GeminiDecideWorkflow],
        activities=[decide_activity(gemini, attempts)],
        workflow_runner=UnsandboxedWorkflowRunner(),
    ):
        handle = await client.start_workflow(
            GeminiDecideWorkflow.run,
            "find the double count",
            id=workflow_id,
            task_queue=task_queue,
            execution_timeout=timedelta(seconds=60),
        )
        try:
            result: Any = await handle.result()
        except WorkflowFailureError as exc:
            result = exc
        history = await handle.fetch_history()
    return result, json.dumps(history.to_json_dict())


async def test_transient_errors_are_retried_by_temporal(client: Client) -> None:
    gemini = ScriptedGemini(
        [
            error_reply(429, "quota exceeded"),
            error_reply(500, "internal"),
            function_call_reply("finalize_context", {"summary": "ledger.py"}, usage_metadata(300, 20)),
        ]
    )
    attempts: list[int] = []
    result, history = await run_workflow(client, gemini, attempts)
    assert isinstance(result, dict) and result["action"] == "finalize_context"
    assert attempts == [1, 2, 3]
    assert len(gemini.requests) == 3  # one HTTP request per Temporal attempt
    assert KEY not in history


async def test_invalid_request_fails_without_retry(client: Client) -> None:
    gemini = ScriptedGemini([error_reply(400, "API key not valid. Please pass a valid API key.")])
    attempts: list[int] = []
    result, history = await run_workflow(client, gemini, attempts)
    assert isinstance(result, WorkflowFailureError)
    cause = result.cause
    assert isinstance(cause, ActivityError) and isinstance(cause.cause, ApplicationError)
    assert cause.cause.type == "ModelError" and cause.cause.non_retryable
    assert "set GEMINI_API_KEY to a valid key" in cause.cause.message
    assert attempts == [1] and len(gemini.requests) == 1
    assert KEY not in history


@pytest.fixture(autouse=True)
def _no_real_gemini_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # Make sure nothing here could ever fall back to a real key.
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
        monkeypatch.delenv(name, raising=False)
