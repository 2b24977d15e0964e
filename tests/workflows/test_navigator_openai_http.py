"""NavigatorWorkflow end to end over the real ``openai`` client with a scripted HTTP layer.

A real dev server and worker; the model is an OpenAI-compatible endpoint whose
HTTP layer is scripted: the planning analysis, a 429 with Retry-After retried
by the workflow's model-call block after the server's delay, a turn, a stream
that goes silent (cut by the stream guard, the connection closed, retried), the
finalize and the stage check. The ledger equals what the server reported,
priced at the endpoint's declared rates, and the key never reaches history.
"""

from __future__ import annotations

import json
import re
import uuid
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from temporalio.client import Client

from durable_navigator.activities.artifacts import LocalArtifactStore
from durable_navigator.activities.models.openai.testing import (
    ScriptedOpenAI,
    error_reply,
    stalled_reply,
    text_reply,
    tool_call_reply,
    usage,
)
from durable_navigator.activities.models.registry import ModelRegistry
from durable_navigator.activities.navigator import NavigatorActivities
from durable_navigator.activities.pricing_loader import TablePricer
from durable_navigator.navcore.run.decision import TokenUsage
from durable_navigator.navcore.model.endpoints import Endpoint
from durable_navigator.navcore.navigator.model_calls import StreamGuard
from durable_navigator.navcore.model.pricing import ModelPricingRates
from durable_navigator.navcore.navigator.requests import ExplorationRequest, ModelCallConfig
from durable_navigator.navcore.navigator.state import StopReason
from durable_navigator.workflows.navigator import NavigatorWorkflow
from tests.cli.test_refusals import _decoded
from tests.support import FIXTURE_REPO

KEY = "sk-workflow-canary-3b7d9e21"
MODEL = "vllm:Qwen2.5-Coder-7B-Instruct"
ENDPOINT = Endpoint(base_url="http://127.0.0.1:8000/v1", api_key_env="VLLM_TEST_KEY",
                    prices={"*": ModelPricingRates(input=Decimal(1), output=Decimal(2), cached=Decimal("0.5"))})
GOAL = "why are tokens double-counted in budget enforcement?"
ZOOM = {"reasoning": "the ledger books usage", "updates": {"set_rules": [{"glob": "src/budgetkit/ledger.py", "level": 4}]}}


async def test_a_navigator_run_over_a_scripted_openai_compatible_endpoint(
    client: Client, task_queue: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from durable_navigator.workers.worker import build_worker

    monkeypatch.setenv("VLLM_TEST_KEY", KEY)  # the worker's environment
    finalize = tool_call_reply("finalize_context", {"summary": "ledger.py records usage twice"}, usage(3200, 15))
    server = ScriptedOpenAI([
        text_reply("DIRECT: one place", usage(900, 5)),
        error_reply(429, "Rate limit reached", retry_after="1"),
        tool_call_reply("update_flight_plan", ZOOM, usage(3000, 60, 1000)),
        stalled_reply(finalize, (5.0,)),  # silent before its first chunk: cut, retried
        finalize,
        text_reply("C1: MET | ledger.py at L4", usage(1500, 10)),
    ])
    registry = ModelRegistry(endpoints={"vllm": ENDPOINT}, openai_transport=server.transport)
    acts = NavigatorActivities(LocalArtifactStore(tmp_path / "artifacts"),
                               pricer=TablePricer.load(endpoints={"vllm": ENDPOINT}), models=registry)
    req = ExplorationRequest(
        repo_path=str(FIXTURE_REPO), goal=GOAL, model=MODEL, token_budget=2000, max_iterations=4,
        out_dir=str(tmp_path / "out"), budget_usd=Decimal("0.5"),
        model_call=ModelCallConfig(max_attempts=3, initial_interval_s=0.1,
                                   stream=StreamGuard(first_chunk_timeout_s=1, inter_chunk_timeout_s=1)),
    )
    wf_id = f"nav-openai-{uuid.uuid4()}"
    async with build_worker(client, task_queue, activities=acts):
        handle = await client.start_workflow(NavigatorWorkflow.run, req, id=wf_id, task_queue=task_queue,
                                             execution_timeout=timedelta(seconds=120))
        result = await handle.result()
        history = await handle.fetch_history()

    assert result.stop_reason is StopReason.FINALIZED and result.iterations == 2
    assert server.remaining == 0 and len(server.requests) == 6
    # the 429 and the stall were retried by the workflow in new activities: the same request each time
    assert server.requests[1].body == server.requests[2].body
    assert server.requests[3].body == server.requests[4].body
    assert server.closed_streams == 5  # every stream closed, the stalled one included
    reported = [TokenUsage(input_tokens=900, output_tokens=5),
                TokenUsage(input_tokens=3000, output_tokens=60, cached_tokens=1000),
                TokenUsage(input_tokens=3200, output_tokens=15), TokenUsage(input_tokens=1500, output_tokens=10)]
    pricer = TablePricer.load(endpoints={"vllm": ENDPOINT})
    # the stalled attempt was cut before its first chunk: the endpoint had read the prompt, so it is booked
    # at the prompt we counted (its model.request input's prompt_tokens) × the input price (#29: it was $0)
    cut = result.usage.input_tokens - sum(u.input_tokens for u in reported)
    assert cut > 0 and str(cut) in re.findall(r'"prompt_tokens":\s*(\d+)', _decoded(history))
    assert result.cost_micros == sum(pricer.cost(MODEL, u) for u in reported) + pricer.cost(
        MODEL, TokenUsage(input_tokens=cut))
    assert result.usage == sum(reported, TokenUsage(input_tokens=cut))
    report = json.loads(Path(result.report_path or "").read_text())
    # two failed attempts booked: the 429 at zero (never read), the stall at its prompt
    assert report["ledger"]["per_model"][MODEL]["attempts"] == 6
    events = json.dumps(history.to_json_dict())
    assert "ModelStalled" in events or "stream guard" in events
    assert KEY not in _decoded(history)
    assert all(r.headers["authorization"] == f"Bearer {KEY}" for r in server.requests)
