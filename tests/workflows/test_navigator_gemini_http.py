"""NavigatorWorkflow end to end over the real google-genai client with a scripted HTTP layer.

A real dev server and worker: planning (analyze → plan), the turns as
function calls, a 429 with RetryInfo retried by the workflow's model-call
block after the server's delay, a 400 that ends the run non-retryably — the
ledger equals what the scripted server reported, priced at the shipped
Gemini rates, and the API key never reaches history.
"""

from __future__ import annotations

from tests.support import FIXTURE_REPO as FIXTURE_REPO_DIR

import json
import uuid
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from temporalio.client import Client

from durable_navigator.activities.artifacts import LocalArtifactStore
from durable_navigator.activities.models.gemini import GeminiCredentials, GeminiModel
from durable_navigator.activities.models.gemini.testing import (
    ScriptedGemini,
    error_reply,
    function_call_reply,
    text_reply,
    usage_metadata,
)
from durable_navigator.activities.navigator import NavigatorActivities
from durable_navigator.activities.pricing_loader import TablePricer
from durable_navigator.navcore.run.decision import TokenUsage
from durable_navigator.navcore.navigator.requests import ExplorationRequest, ModelCallConfig
from durable_navigator.navcore.navigator.state import StopReason
from durable_navigator.workflows.navigator import NavigatorWorkflow

KEY = "AIzaTEST-temporal-key-7d1e0b"
MODEL = "gemini-2.5-flash"
FIXTURE = FIXTURE_REPO_DIR
GOAL = "why are tokens double-counted in budget enforcement, and where is the plugin hooked in?"
ZOOM = {"reasoning": "the ledger books usage", "updates": {"set_rules": [{"glob": "src/budgetkit/ledger.py", "level": 4}]}}


async def _explore(client: Client, task_queue: str, tmp_path: Path, gemini: ScriptedGemini) -> tuple[object, str]:
    from durable_navigator.workers.worker import build_worker

    model = GeminiModel(credentials=GeminiCredentials(api_key=KEY), transport=gemini.transport)
    acts = NavigatorActivities(LocalArtifactStore(tmp_path / "artifacts"), pricer=TablePricer.load(),
                               model_overrides={MODEL: model})
    req = ExplorationRequest(repo_path=str(FIXTURE), goal=GOAL, model=MODEL, token_budget=2000, max_iterations=4,
                             out_dir=str(tmp_path / "out"), budget_usd=Decimal("0.5"),
                             model_call=ModelCallConfig(max_attempts=3, initial_interval_s=0.1))
    wf_id = f"nav-gemini-{uuid.uuid4()}"
    async with build_worker(client, task_queue, activities=acts):
        handle = await client.start_workflow(NavigatorWorkflow.run, req, id=wf_id, task_queue=task_queue,
                                             execution_timeout=timedelta(seconds=90))
        try:
            result = await handle.result()
        except Exception as exc:  # noqa: BLE001 - the caller asserts on it
            result = exc
        history = json.dumps((await handle.fetch_history()).to_json_dict())
    return result, history


async def test_a_navigator_run_over_scripted_gemini_http(client: Client, task_queue: str, tmp_path: Path) -> None:
    gemini = ScriptedGemini([
        text_reply("The ledger and the plugin are involved.\nREFLECT: no", usage_metadata(900, 30)),
        text_reply("STAGE 1: Find the ledger\n- `src/budgetkit/ledger.py` is shown at level 2 or more\n"
                   "MAX_ITERATIONS: 3", usage_metadata(1000, 40)),
        error_reply(429, "quota exceeded", retry_delay_s=1),
        function_call_reply("update_flight_plan", ZOOM, usage_metadata(3000, 60, 20, 1000)),
        function_call_reply("finalize_context", {"summary": "ledger.py records usage twice"}, usage_metadata(3200, 15)),
        text_reply("C1: MET | ledger.py at L4", usage_metadata(1500, 10)),
    ])
    result, history = await _explore(client, task_queue, tmp_path, gemini)
    assert not isinstance(result, Exception), result
    assert result.stop_reason is StopReason.FINALIZED and result.iterations == 2  # type: ignore[attr-defined]
    assert gemini.remaining == 0 and len(gemini.requests) == 6
    # the 429 was retried by the workflow after the server's delay, in a new activity: one HTTP call each
    assert gemini.requests[2].body == gemini.requests[3].body
    usages = [TokenUsage(input_tokens=900, output_tokens=30), TokenUsage(input_tokens=1000, output_tokens=40),
              TokenUsage(input_tokens=3000, output_tokens=60, thinking_tokens=20, cached_tokens=1000),
              TokenUsage(input_tokens=3200, output_tokens=15), TokenUsage(input_tokens=1500, output_tokens=10)]
    pricer = TablePricer.load()
    assert result.cost_micros == sum(pricer.cost(MODEL, u) for u in usages)  # type: ignore[attr-defined]
    report = json.loads(Path(result.report_path).read_text())  # type: ignore[attr-defined]
    assert report["tokens"]["input_tokens"] == 9600 and report["stop_reason"] == "finalized"
    assert KEY not in history and "AIza" not in history
    for request in gemini.requests:
        assert KEY not in request.text_without_key_header()


async def test_an_invalid_request_ends_the_run_without_retry(client: Client, task_queue: str, tmp_path: Path) -> None:
    gemini = ScriptedGemini([
        text_reply("DIRECT: one place", usage_metadata(900, 5)),
        error_reply(400, "API key not valid. Please pass a valid API key."),
    ])
    result, history = await _explore(client, task_queue, tmp_path, gemini)
    assert not isinstance(result, Exception), result
    assert result.stop_reason is StopReason.FAILED  # type: ignore[attr-defined]
    assert "set GEMINI_API_KEY to a valid key" in (result.stop_detail or "")  # type: ignore[attr-defined]
    assert len(gemini.requests) == 2 and Path(result.context_path).exists()  # type: ignore[attr-defined]
    assert KEY not in history


@pytest.fixture(autouse=True)
def _no_real_gemini_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # Make sure nothing here could ever fall back to a real key.
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
        monkeypatch.delenv(name, raising=False)
