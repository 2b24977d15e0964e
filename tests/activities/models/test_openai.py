"""OpenAI-compatible endpoints over the real ``openai`` client with a scripted HTTP layer (no network).

Provider-level behaviour (request shape, streaming, usage, error classes, the
stream guard, the JSON-output fallback) and the ``model.request`` activity code
around it (corrective re-asks, parsing, pricing, what a failed attempt reports).
"""

from __future__ import annotations

import json
import logging
import time
from decimal import Decimal
from email.utils import format_datetime
from datetime import datetime, timedelta, timezone

import pytest
from temporalio.exceptions import ApplicationError

from durable_navigator.activities.models.base import CallContext, ModelCallError, ModelStalledError, ModelTransientError
from durable_navigator.activities.models.openai import NO_KEY, OpenAICredentials, OpenAIModel, usage_from_openai
from durable_navigator.activities.models.openai.errors import retry_after_seconds
from durable_navigator.activities.models.openai.schema import to_openai_parameters, tool_declarations
from durable_navigator.activities.models.openai.testing import (
    ScriptedOpenAI,
    ScriptedReply,
    connection_error_reply,
    error_reply,
    sse_events,
    stalled_reply,
    text_reply,
    tool_call_reply,
    tool_calls_reply,
    usage,
)
from durable_navigator.activities.models.registry import ModelRegistry
from durable_navigator.activities.pricing_loader import TablePricer
from durable_navigator.navcore.run.decision import TokenUsage, navigator_function_declarations, updates_json_schema
from durable_navigator.navcore.model.endpoints import Endpoint
from durable_navigator.navcore.model.model import AnalyzeTask, ToolSpec
from durable_navigator.navcore.navigator.model_calls import AnalysisOut, DecisionOut, StreamGuard
from durable_navigator.navcore.planning.planning import PlanningConfig
from durable_navigator.navcore.model.pricing import ModelPricingRates
from durable_navigator.navtypes.errors import BudgetError, ModelError
from durable_navigator.navtypes.flightplan import FlightPlanUpdate, Level
from tests.support.models import attempt, decide_request, model_activities, spent_of, text_request

KEY = "sk-TEST-not-a-real-key-9c2e4f"
MODEL = "local:qwen2.5-coder:7b"
#: $1 / $2 per million tokens, cached $0.25, reasoning $2: easy micro-dollar figures
RATES = ModelPricingRates(input=Decimal(1), output=Decimal(2), thinking=Decimal(2), cached=Decimal("0.25"))
ENDPOINT = Endpoint(base_url="http://127.0.0.1:9/v1", api_key_env="LOCAL_TEST_KEY", prices={"*": RATES})
UPDATE_ARGS = {
    "reasoning": "the budget plugin lives in src/budget",
    "updates": {"set_rules": [{"glob": "src/budget/**", "level": 4}],
                "add_focus_symbols": [{"symbol": "Ledger.charge", "weight": 3}]},
}


def make_model(server: ScriptedOpenAI, endpoint: Endpoint = ENDPOINT) -> OpenAIModel:
    return OpenAIModel("local", endpoint, credentials=OpenAICredentials(KEY), transport=server.transport)


def pricer(endpoint: Endpoint = ENDPOINT) -> TablePricer:
    return TablePricer.load(endpoints={"local": endpoint})


def acts_for(tmp_path, server: ScriptedOpenAI, endpoint: Endpoint = ENDPOINT):
    return model_activities(tmp_path, MODEL, make_model(server, endpoint), pricer=pricer(endpoint))


async def test_streamed_tool_call_round_trip() -> None:
    server = ScriptedOpenAI([tool_call_reply("update_flight_plan", UPDATE_ARGS, usage(1200, 120, 600, 40),
                                             reasoning="thinking…")])
    notes: list[str] = []
    answer = await make_model(server).request(decide_request(MODEL), CallContext(heartbeat=notes.append))

    (call,) = answer.tool_calls
    assert call.name == "update_flight_plan" and call.args == UPDATE_ARGS and call.raw_arguments is None
    # completion_tokens include the reasoning tokens: they are booked as thinking, the rest as output
    assert answer.usage == TokenUsage(input_tokens=1200, output_tokens=80, thinking_tokens=40, cached_tokens=600)
    assert answer.calls == 1
    assert len(notes) == len(sse_events("", [("update_flight_plan", json.dumps(UPDATE_ARGS))], {}, "thinking…"))
    assert server.closed_streams == 1  # the HTTP response was closed after [DONE]

    (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    body = request.body
    assert body["model"] == "qwen2.5-coder:7b"  # the endpoint prefix is ours, not the server's
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["max_tokens"] == 777 and "max_completion_tokens" not in body and "temperature" not in body
    assert body["tool_choice"] == "required"
    names = [t["function"]["name"] for t in body["tools"]]
    assert names == ["update_flight_plan", "finalize_context", "search_codebase", "read_file", "list_directory",
                     "get_callers", "get_callees"]
    assert "$ref" not in json.dumps(body["tools"]) and '"title"' not in json.dumps(body["tools"])
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert body["messages"][0]["content"].startswith("SYSTEM:")


async def test_openai_endpoint_sends_max_completion_tokens_and_temperature_when_configured() -> None:
    endpoint = Endpoint(base_url="https://api.openai.com/v1", api_key_env="OPENAI_API_KEY",
                        max_tokens_field="max_completion_tokens", temperature=0.3)
    server = ScriptedOpenAI([tool_call_reply("finalize_context", {"summary": "s"}, usage(10, 2))])
    await OpenAIModel("openai", endpoint, credentials=OpenAICredentials(KEY), transport=server.transport).request(
        decide_request("openai:gpt-4.1-mini"), CallContext())
    body = server.requests[0].body
    assert body["model"] == "gpt-4.1-mini"
    assert body["max_completion_tokens"] == 777 and "max_tokens" not in body and body["temperature"] == 0.3


async def test_text_tasks_send_no_tools_and_parse_through_the_activity(tmp_path) -> None:
    server = ScriptedOpenAI([text_reply("The goal spans the ledger and the plugin.\nREFLECT: no", usage(300, 20))])
    task = AnalyzeTask(goal="g", repo_root=".", config=PlanningConfig())
    out = await attempt(acts_for(tmp_path, server), text_request(task, model=MODEL))
    assert not isinstance(out, ApplicationError)
    assert isinstance(out.result, AnalysisOut) and not out.result.analysis.direct
    assert "tools" not in server.requests[0].body and "tool_choice" not in server.requests[0].body
    assert out.spent.usage == TokenUsage(input_tokens=300, output_tokens=20)
    assert out.spent.cost_micros == 300 * 1 + 20 * 2


async def test_malformed_arguments_get_a_priced_corrective_reask(tmp_path) -> None:
    bad = '{"reasoning": "zoom", "updates": {"set_rules": [{"glob": "src/**", "level": 4}]'  # unterminated
    server = ScriptedOpenAI([
        tool_call_reply("update_flight_plan", bad, usage(1000, 30)),
        tool_call_reply("update_flight_plan", UPDATE_ARGS, usage(1100, 60, 900)),
    ])
    out = await attempt(acts_for(tmp_path, server), decide_request(MODEL))
    assert not isinstance(out, ApplicationError) and isinstance(out.result, DecisionOut)
    decision = out.result.decision
    assert decision.action == "update_flight_plan" and decision.updates is not None
    assert decision.updates.set_rules[0].level is Level.FULL
    # both HTTP calls are booked and priced: 100 uncached + 900 cached input on the second
    assert out.spent.calls == 2
    assert out.spent.usage == TokenUsage(input_tokens=2100, output_tokens=90, cached_tokens=900)
    assert out.spent.cost_micros == 1000 + 30 * 2 + 200 + 900 // 4 + 60 * 2
    reask = server.requests[1].body["messages"]
    assert [m["role"] for m in reask] == ["system", "user", "assistant", "tool", "user"]
    (replayed,) = reask[2]["tool_calls"]
    assert replayed["function"] == {"name": "update_flight_plan", "arguments": bad}  # the model's own text
    assert reask[3]["tool_call_id"] == replayed["id"]
    assert "not a JSON object" in reask[4]["content"] and "update_flight_plan" in reask[4]["content"]


async def test_plain_text_instead_of_a_call_is_reasked_and_then_invalid(tmp_path) -> None:
    server = ScriptedOpenAI([text_reply("I would look at the ledger.", usage(500, 9)),
                             text_reply("Still prose.", usage(520, 4))])
    out = await attempt(acts_for(tmp_path, server), decide_request(MODEL))
    assert not isinstance(out, ApplicationError) and isinstance(out.result, DecisionOut)
    assert out.result.decision.action == "invalid" and "after 2 request(s)" in (out.result.decision.error or "")
    assert out.spent.calls == 2 and out.spent.usage.input_tokens == 1020
    assert server.requests[1].body["messages"][2] == {"role": "assistant", "content": "I would look at the ledger."}


async def test_several_code_tool_calls_in_one_answer(tmp_path) -> None:
    server = ScriptedOpenAI([tool_calls_reply([("search_codebase", {"query": "Ledger"}),
                                               ("read_file", {"path": "src/budget/ledger.py"})],
                                              usage(700, 40), text="look things up")])
    out = await attempt(acts_for(tmp_path, server), decide_request(MODEL))
    assert not isinstance(out, ApplicationError) and isinstance(out.result, DecisionOut)
    decision = out.result.decision
    assert decision.action == "call_tools" and [c.name for c in decision.tool_calls] == ["search_codebase",
                                                                                        "read_file"]


@pytest.mark.parametrize("status", [408, 409, 429, 500, 503])
async def test_transient_statuses_are_retryable_and_the_sdk_does_not_retry(status: int) -> None:
    server = ScriptedOpenAI([error_reply(status, "try later"), tool_call_reply("finalize_context", {"summary": "s"})])
    with pytest.raises(ModelTransientError):
        await make_model(server).request(decide_request(MODEL), CallContext())
    assert len(server.requests) == 1  # exactly one HTTP request: the workflow owns attempts
    assert server.remaining == 1


@pytest.mark.parametrize(("headers", "seconds"), [({"retry_after": "7"}, 7.0), ({"retry_after_ms": "1500"}, 1.5),
                                                  ({"retry_after": "7", "retry_after_ms": "250"}, 0.25)])
async def test_retry_after_becomes_the_next_attempts_delay(tmp_path, headers: dict, seconds: float) -> None:
    server = ScriptedOpenAI([error_reply(429, "Rate limit reached for requests", code="rate_limit_exceeded",
                                         **headers)])
    err = await attempt(acts_for(tmp_path, server), decide_request(MODEL))
    assert isinstance(err, ApplicationError) and not err.non_retryable
    assert err.type == "ModelTransientError" and "rate limit (429)" in err.message
    assert err.next_retry_delay is not None and err.next_retry_delay.total_seconds() == seconds


def test_retry_after_as_an_http_date_and_absurd_values() -> None:
    later = format_datetime(datetime.now(timezone.utc) + timedelta(seconds=30), usegmt=True)
    assert 25 <= (retry_after_seconds({"retry-after": later}) or 0) <= 30
    assert retry_after_seconds({"retry-after": "86400"}) == 3600.0
    assert retry_after_seconds({"retry-after": "soon"}) is None and retry_after_seconds({}) is None


async def test_an_exhausted_quota_is_not_retried(tmp_path) -> None:
    server = ScriptedOpenAI([error_reply(429, "You exceeded your current quota", code="insufficient_quota")])
    err = await attempt(acts_for(tmp_path, server), decide_request(MODEL))
    assert isinstance(err, ApplicationError) and err.non_retryable and "add credit" in err.message


async def test_connection_refused_is_retryable_and_says_where() -> None:
    server = ScriptedOpenAI([connection_error_reply()])
    with pytest.raises(ModelTransientError, match=r"could not reach endpoint 'local' \(http://127.0.0.1:9/v1\)"):
        await make_model(server).request(decide_request(MODEL), CallContext())


@pytest.mark.parametrize(
    ("status", "message", "code", "expected"),
    [
        (400, "Invalid value for 'tool_choice'", None, "endpoint 'local' (http://127.0.0.1:9/v1) rejected the request (400)"),
        (401, "Incorrect API key provided", "invalid_api_key", "rejected the API key (401): set LOCAL_TEST_KEY"),
        (404, "model 'qwen9' not found", "model_not_found", "does not serve model 'local:qwen2.5-coder:7b' (404)"),
        (400, "This model's maximum context length is 8192 tokens. However, your messages resulted in 9120 tokens.",
         "context_length_exceeded", "the prompt is longer than local:qwen2.5-coder:7b's context window (400"),
        (400, "the request exceeds the available context size, try increasing it", "exceed_context_size_error",
         "the prompt is longer than local:qwen2.5-coder:7b's context window (400"),
    ],
    ids=["bad-request", "bad-key", "no-such-model", "openai-context-length", "llamacpp-context-size"],
)
async def test_client_errors_are_non_retryable_with_a_clear_message(
    tmp_path, status: int, message: str, code: str | None, expected: str
) -> None:
    server = ScriptedOpenAI([error_reply(status, message, code=code)])
    err = await attempt(acts_for(tmp_path, server), decide_request(MODEL))
    assert isinstance(err, ApplicationError)
    assert err.type == "ModelError" and err.non_retryable
    assert expected in err.message, err.message
    assert "\n" not in err.message and len(server.requests) == 1
    if "context window" in expected:
        assert "lower --tokens" in err.message and "--ctx-size" in err.message


async def test_the_key_never_appears_in_errors_or_request_bodies(tmp_path) -> None:
    server = ScriptedOpenAI([
        text_reply("nope", usage(10, 1)),
        error_reply(401, f"Incorrect API key provided: {KEY}"),
        error_reply(500, f"backend echoed key={KEY}"),
    ])
    acts = acts_for(tmp_path, server)
    for _ in range(2):
        err = await attempt(acts, decide_request(MODEL))
        assert isinstance(err, ApplicationError)
        assert KEY not in str(err) and KEY not in repr(err.details)
    assert KEY not in repr(OpenAICredentials(KEY))
    for request in server.requests:
        assert request.headers["authorization"] == f"Bearer {KEY}"  # sent only in its header
        assert KEY not in request.text_without_key_header()


async def test_failure_during_reask_reports_the_usage_already_spent(tmp_path) -> None:
    server = ScriptedOpenAI([text_reply("hmm", usage(900, 100, 300, 60)), error_reply(503, "overloaded")])
    err = await attempt(acts_for(tmp_path, server), decide_request(MODEL))
    assert isinstance(err, ApplicationError) and not err.non_retryable
    spent = spent_of(err)
    assert spent.usage == TokenUsage(input_tokens=900, output_tokens=40, thinking_tokens=60, cached_tokens=300)
    assert spent.calls == 2 and spent.cost_micros == 600 + 75 + 80 + 120 and spent.in_flight_micros == 0


async def test_a_first_call_that_cannot_fit_is_refused_before_any_request(tmp_path) -> None:
    server = ScriptedOpenAI([tool_call_reply("finalize_context", {"summary": "s"})])
    err = await attempt(acts_for(tmp_path, server), decide_request(MODEL), allowance=5)
    assert isinstance(err, ApplicationError) and err.type == BudgetError.kind and err.non_retryable
    assert server.requests == [] and spent_of(err).cost_micros == 0


# the stall (10 s) is far beyond the guard (0.5 s) and the bound (8 s): a loaded machine slows the
# request setup by seconds (2.5 s against a 3 s stall failed at load 8; 2.8 s measured at load 36)
@pytest.mark.parametrize("delays", [(10.0,), (0.0, 0.0, 10.0)], ids=["before-first-chunk", "between-chunks"])
async def test_stream_guard_cuts_a_silent_stream_and_closes_the_connection(delays: tuple[float, ...]) -> None:
    server = ScriptedOpenAI([stalled_reply(tool_call_reply("finalize_context", {"summary": "late"}, usage(400, 5)),
                                           delays)])
    ctx = CallContext(stream_guard=StreamGuard(first_chunk_timeout_s=0.5, inter_chunk_timeout_s=0.5))
    started = time.monotonic()
    with pytest.raises(ModelStalledError, match="first chunk" if len(delays) == 1 else "next chunk"):
        await make_model(server).request(decide_request(MODEL), ctx)
    assert time.monotonic() - started < 8
    assert server.closed_streams == 1  # the HTTP response (the connection) was closed


async def test_a_stalled_attempt_is_retryable_and_books_what_it_used(tmp_path) -> None:
    answer = text_reply("The ledger books usage twice because the plugin " * 4, usage(400, 60))
    silent_after = len(answer.events) - 2  # text streamed, then silence before finish and usage
    delays = tuple(0.0 for _ in range(silent_after)) + (3.0,)
    server = ScriptedOpenAI([stalled_reply(answer, delays)])
    acts = acts_for(tmp_path, server)
    req = decide_request(MODEL)
    err = await attempt(acts, req, stream=StreamGuard(first_chunk_timeout_s=1, inter_chunk_timeout_s=0.5))
    assert isinstance(err, ApplicationError) and err.type == "ModelStalled" and not err.non_retryable
    spent = spent_of(err)
    # no usage came before the stall: the prompt we counted plus the text received is booked
    assert spent.calls == 1 and spent.usage.input_tokens == acts._prompt_tokens(req)
    assert spent.usage.output_tokens > 0 and spent.cost_micros > 0
    assert server.closed_streams == 1


async def test_a_server_that_reports_no_usage_is_booked_at_an_estimate_and_says_so(
    tmp_path, caplog: pytest.LogCaptureFixture
) -> None:
    server = ScriptedOpenAI([tool_call_reply("finalize_context", {"summary": "the ledger double-books"}, use=None)])
    acts = acts_for(tmp_path, server)
    req = decide_request(MODEL)
    with caplog.at_level(logging.WARNING):
        out = await attempt(acts, req)
    assert not isinstance(out, ApplicationError)
    assert out.spent.usage.input_tokens == acts._prompt_tokens(req) and out.spent.usage.output_tokens > 0
    assert "reported no usage" in caplog.text


async def test_json_output_fallback_by_configuration(tmp_path) -> None:
    endpoint = ENDPOINT.model_copy(update={"tool_calling": "json"})
    finalize = json.dumps({"calls": [{"name": "finalize_context", "arguments": {"summary": "ledger.py"}}]})
    server = ScriptedOpenAI([
        text_reply("I think the ledger.", usage(800, 10)),  # no JSON: re-asked
        text_reply(f"```json\n{finalize}\n```", usage(850, 25)),
    ])
    out = await attempt(acts_for(tmp_path, server, endpoint), decide_request(MODEL))
    assert not isinstance(out, ApplicationError) and isinstance(out.result, DecisionOut)
    assert out.result.decision.action == "finalize_context" and out.result.decision.summary == "ledger.py"
    assert out.spent.calls == 2
    first = server.requests[0].body
    assert "tools" not in first and "tool_choice" not in first
    system = first["messages"][0]["content"]
    assert "FUNCTIONS." in system and '"calls"' in system and "- update_flight_plan:" in system
    assert "You must call a function." in system


async def test_json_mode_replays_a_bad_call_as_json_text(tmp_path) -> None:
    endpoint = ENDPOINT.model_copy(update={"tool_calling": "json"})
    bad = json.dumps({"calls": [{"name": "update_flight_plan", "arguments": "{oops"}]})
    good = json.dumps({"calls": [{"name": "finalize_context", "arguments": {"summary": "done"}}]})
    server = ScriptedOpenAI([text_reply(bad, usage(100, 10)), text_reply(good, usage(120, 10))])
    out = await attempt(acts_for(tmp_path, server, endpoint), decide_request(MODEL))
    assert not isinstance(out, ApplicationError) and isinstance(out.result, DecisionOut)
    assert out.result.decision.action == "finalize_context"
    replay = server.requests[1].body["messages"]
    assert [m["role"] for m in replay] == ["system", "user", "assistant", "user"]
    assert json.loads(replay[2]["content"]) == {"calls": [{"name": "update_flight_plan", "arguments": "{oops"}]}
    assert "not a JSON object" in replay[3]["content"]


def test_usage_mapping_keeps_cached_and_reasoning_within_their_totals() -> None:
    class U:
        prompt_tokens, completion_tokens = 100, 10
        prompt_tokens_details = type("P", (), {"cached_tokens": 400})()
        completion_tokens_details = type("C", (), {"reasoning_tokens": 30})()

    assert usage_from_openai(U()) == TokenUsage(input_tokens=100, output_tokens=0, thinking_tokens=10,
                                                cached_tokens=100)
    assert usage_from_openai(None) == TokenUsage()


def test_tool_schemas_are_self_contained() -> None:
    params = to_openai_parameters(updates_json_schema())
    assert set(params["properties"]) == set(FlightPlanUpdate.model_fields)
    text = json.dumps(params)
    assert "$ref" not in text and "$defs" not in text and '"title"' not in text
    level = params["properties"]["set_rules"]["items"]["properties"]["level"]
    assert level["enum"] == [0, 1, 2, 3, 4]
    declared = tool_declarations([ToolSpec(**d) for d in navigator_function_declarations()])
    assert all(d["type"] == "function" and d["function"]["parameters"]["type"] == "object" for d in declared)
    with pytest.raises(ValueError, match="does not define"):
        to_openai_parameters({"type": "object", "properties": {"x": {"$ref": "#/$defs/Missing"}}})


def test_credentials_come_from_the_variable_the_endpoint_names() -> None:
    assert OpenAICredentials.from_env("local", ENDPOINT, {"LOCAL_TEST_KEY": "abc"}).api_key == "abc"
    with pytest.raises(ModelError, match="endpoint 'local' needs its API key in LOCAL_TEST_KEY on the worker"):
        OpenAICredentials.from_env("local", ENDPOINT, {"OPENAI_API_KEY": "not-this-one"})
    keyless = Endpoint(base_url="http://127.0.0.1:11434/v1")
    assert OpenAICredentials.from_env("ollama", keyless, {"OPENAI_API_KEY": "x"}).api_key is None


async def test_a_keyless_server_never_gets_another_endpoints_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    server = ScriptedOpenAI([tool_call_reply("finalize_context", {"summary": "s"}, usage(5, 1))])
    model = OpenAIModel("ollama", Endpoint(base_url="http://127.0.0.1:11434/v1"), transport=server.transport)
    await model.request(decide_request("ollama:qwen2.5-coder:7b"), CallContext())
    assert server.requests[0].headers["authorization"] == f"Bearer {NO_KEY}"
    assert KEY not in json.dumps(server.requests[0].headers)


async def test_a_missing_key_is_a_model_error_before_any_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOCAL_TEST_KEY", raising=False)
    server = ScriptedOpenAI([])
    model = OpenAIModel("local", ENDPOINT, transport=server.transport)
    with pytest.raises(ModelError, match="LOCAL_TEST_KEY"):
        model.check_credentials()
    with pytest.raises(ModelError, match="LOCAL_TEST_KEY"):
        await model.request(decide_request(MODEL), CallContext())
    assert server.requests == []


def test_the_registry_serves_configured_and_built_in_endpoints() -> None:
    registry = ModelRegistry(endpoints={"local": ENDPOINT})
    assert isinstance(registry.model(MODEL), OpenAIModel)
    built_in = registry.model("ollama:qwen2.5-coder:7b")
    assert isinstance(built_in, OpenAIModel) and built_in.endpoint.base_url == "http://127.0.0.1:11434/v1"
    with pytest.raises(ModelError, match="unknown model endpoint 'lmstudio'.*name it under 'endpoints:'"):
        registry.model("lmstudio:qwen")
    with pytest.raises(ModelError, match="unknown model endpoint 'local'"):
        ModelRegistry().model(MODEL)


def test_prices_come_from_the_endpoint_or_the_shipped_table() -> None:
    table = pricer().table
    assert table.rates_for(MODEL) == RATES  # the endpoint's "*"
    assert table.rates_for("ollama:llama3.1:8b").is_free  # the built-in local endpoint declares 0
    shipped = table.rates_for("openai:gpt-4.1-mini")
    assert (shipped.input, shipped.output, shipped.cached) == (Decimal("0.40"), Decimal("1.60"), Decimal("0.10"))
    assert "openai.com/api/pricing" in shipped.note
    with pytest.raises(BudgetError, match=r"no price; declare it in navigator.yaml, e.g. endpoints: \{vllm:"):
        TablePricer.load(endpoints={"vllm": Endpoint(base_url="http://127.0.0.1:8000/v1")}).rates("vllm:qwen")
    with pytest.raises(BudgetError, match="'openai:gpt-9' has no price"):
        table.rates_for("openai:gpt-9")


def test_model_call_errors_are_model_errors() -> None:
    assert issubclass(ModelCallError, ModelError)
    assert isinstance(ScriptedReply(200), ScriptedReply)


async def test_a_stream_cut_before_its_first_chunk_is_booked_at_the_prompt(tmp_path) -> None:
    """#29: a guard cut before the first chunk was booked $0 though the endpoint bills the prompt it read."""
    server = ScriptedOpenAI([stalled_reply(tool_call_reply("finalize_context", {"summary": "late"}, usage(400, 5)),
                                           (3.0,))])
    acts = acts_for(tmp_path, server)
    req = decide_request(MODEL)
    err = await attempt(acts, req, stream=StreamGuard(first_chunk_timeout_s=0.5, inter_chunk_timeout_s=0.5))
    assert isinstance(err, ApplicationError) and err.type == "ModelStalled" and not err.non_retryable
    spent = spent_of(err)
    prompt = acts._prompt_tokens(req)
    assert spent.usage == TokenUsage(input_tokens=prompt) and spent.calls == 1 and spent.in_flight_micros == 0
    assert spent.cost_micros == acts.pricer.cost(MODEL, TokenUsage(input_tokens=prompt), 1) > 0
    assert server.closed_streams == 1
