"""The Gemini model over the real google-genai client with a scripted HTTP layer (no network).

Provider-level behaviour (request shape, streaming, usage, error classes, the
stream guard) and the ``model.request`` activity code around it (corrective
re-asks, parsing, pricing, what a failed attempt reports).
"""

from __future__ import annotations

import time

import pytest
from tests.support.models import attempt, decide_request, model_activities, spent_of, text_request
from temporalio.exceptions import ApplicationError

from durable_navigator.activities.models.base import CallContext, ModelCallError, ModelStalledError, ModelTransientError
from durable_navigator.activities.models.gemini import GeminiConfig, GeminiCredentials, GeminiModel
from durable_navigator.activities.models.gemini.schema import to_gemini_schema
from durable_navigator.activities.models.gemini.testing import (
    ScriptedGemini,
    connection_error_reply,
    empty_reply,
    error_reply,
    function_call_reply,
    stalled_reply,
    text_reply,
    usage_metadata,
)
from durable_navigator.navcore.run.decision import TokenUsage, updates_json_schema
from durable_navigator.navtypes.errors import ModelError
from durable_navigator.navtypes.flightplan import FlightPlanUpdate, Level
from durable_navigator.navcore.model.model import AnalyzeTask
from durable_navigator.navcore.navigator.model_calls import AnalysisOut, DecisionOut, StreamGuard
from durable_navigator.navcore.planning.planning import PlanningConfig

KEY = "AIzaTEST-not-a-real-key-4f9c2e"
MODEL = "gemini-2.5-flash"
UPDATE_ARGS = {
    "reasoning": "the budget plugin lives in src/budget",
    "updates": {
        "set_rules": [{"glob": "src/budget/**", "level": 4}],
        "add_focus_symbols": [{"symbol": "Ledger.charge", "weight": 3}],
    },
}


def make_model(gemini: ScriptedGemini) -> GeminiModel:
    return GeminiModel(credentials=GeminiCredentials(api_key=KEY), transport=gemini.transport, config=GeminiConfig())


async def test_streamed_function_call_round_trip() -> None:
    gemini = ScriptedGemini(
        [function_call_reply("update_flight_plan", UPDATE_ARGS, usage_metadata(1200, 80, 40, 600), thought="…")]
    )
    notes: list[str] = []
    ctx = CallContext(heartbeat=notes.append)
    answer = await make_model(gemini).request(decide_request(), ctx)

    (call,) = answer.tool_calls
    assert call.name == "update_flight_plan" and call.args["reasoning"] == UPDATE_ARGS["reasoning"]
    assert answer.usage == TokenUsage(input_tokens=1200, output_tokens=80, thinking_tokens=40, cached_tokens=600)
    assert answer.calls == 1
    assert len(notes) == 2  # one heartbeat per streamed chunk

    (request,) = gemini.requests
    assert request.streamed and request.path.endswith("models/gemini-2.5-flash:streamGenerateContent")
    body = request.body
    assert body["systemInstruction"]["parts"][0]["text"].startswith("SYSTEM:")
    assert body["contents"][0]["parts"][0]["text"].startswith("GOAL:")
    names = [f["name"] for f in body["tools"][0]["functionDeclarations"]]
    # the navigator functions, then the code tools
    assert names == ["update_flight_plan", "finalize_context", "search_codebase", "read_file", "list_directory",
                     "get_callers", "get_callees"]
    assert body["toolConfig"]["functionCallingConfig"]["mode"] == "ANY"
    assert body["generationConfig"]["maxOutputTokens"] == 777


async def test_text_tasks_send_no_tools_and_parse_through_the_activity(tmp_path) -> None:
    reply = "The goal spans the ledger and the plugin.\nREFLECT: no"
    gemini = ScriptedGemini([text_reply(reply, usage_metadata(300, 20))])
    acts = model_activities(tmp_path, MODEL, make_model(gemini))
    task = AnalyzeTask(goal="g", repo_root=".", config=PlanningConfig())
    out = await attempt(acts, text_request(task))
    assert not isinstance(out, ApplicationError)
    assert isinstance(out.result, AnalysisOut) and not out.result.analysis.direct
    assert "tools" not in gemini.requests[0].body
    assert out.spent.usage.input_tokens == 300 and out.spent.cost_micros > 0


def test_updates_schema_mirrors_flight_plan_update() -> None:
    schema = to_gemini_schema(updates_json_schema())
    assert schema.properties is not None
    assert set(schema.properties) == set(FlightPlanUpdate.model_fields)
    level = schema.properties["set_rules"].items.properties["level"]  # type: ignore[union-attr]
    assert (level.minimum, level.maximum) == (0, 4)
    assert all(prop.description for prop in schema.properties.values())


async def test_corrective_reask_then_success_sums_usage(tmp_path) -> None:
    gemini = ScriptedGemini(
        [
            text_reply("I think we should look at the ledger.", usage_metadata(1000, 30, 200, 400)),
            function_call_reply("update_flight_plan", UPDATE_ARGS, usage_metadata(1100, 60, 100, 900)),
        ]
    )
    out = await attempt(model_activities(tmp_path, MODEL, make_model(gemini)), decide_request())
    assert not isinstance(out, ApplicationError) and isinstance(out.result, DecisionOut)
    decision = out.result.decision
    assert decision.action == "update_flight_plan" and decision.updates is not None
    assert decision.updates.set_rules[0].level is Level.FULL
    assert out.spent.calls == 2
    assert out.spent.usage == TokenUsage(input_tokens=2100, output_tokens=90, thinking_tokens=300, cached_tokens=1300)
    reask = gemini.requests[1].body["contents"]
    assert [c["role"] for c in reask] == ["user", "model", "user"]
    assert "no function call" in reask[2]["parts"][-1]["text"]


async def test_bad_arguments_get_a_function_response_in_the_reask(tmp_path) -> None:
    bad = {"reasoning": "zoom", "updates": {"set_rules": [{"glob": "/etc/**", "level": 9}]}}
    gemini = ScriptedGemini(
        [
            function_call_reply("update_flight_plan", bad, usage_metadata(500, 20)),
            function_call_reply("finalize_context", {"summary": "done"}, usage_metadata(520, 10)),
        ]
    )
    out = await attempt(model_activities(tmp_path, MODEL, make_model(gemini)), decide_request())
    assert not isinstance(out, ApplicationError) and isinstance(out.result, DecisionOut)
    assert out.result.decision.action == "finalize_context" and out.spent.calls == 2
    correction = gemini.requests[1].body["contents"][2]["parts"]
    assert correction[0]["functionResponse"]["name"] == "update_flight_plan"
    assert "updates.set_rules.0" in correction[0]["functionResponse"]["response"]["error"]


@pytest.mark.parametrize(
    "replies",
    [
        [text_reply("no", usage_metadata(10, 1)), text_reply("still no", usage_metadata(12, 2))],
        [empty_reply(usage_metadata(10)), empty_reply(usage_metadata(12))],
        [
            function_call_reply("update_flight_plan", {"reasoning": "x"}, usage_metadata(10, 1)),
            function_call_reply("delete_repo", {}, usage_metadata(12, 2)),
        ],
    ],
    ids=["text", "blocked", "missing-updates-then-unknown-function"],
)
async def test_second_failure_is_an_invalid_decision_not_a_crash(tmp_path, replies: list) -> None:
    gemini = ScriptedGemini(replies)
    out = await attempt(model_activities(tmp_path, MODEL, make_model(gemini)), decide_request())
    assert not isinstance(out, ApplicationError) and isinstance(out.result, DecisionOut)
    decision = out.result.decision
    assert decision.action == "invalid"
    assert out.spent.calls == 2 and len(gemini.requests) == 2
    assert out.spent.usage.input_tokens == 22
    assert decision.error and "after 2 request(s)" in decision.error
    assert gemini.remaining == 0


@pytest.mark.parametrize("status", [408, 429, 500, 503])
async def test_transient_statuses_are_retryable_and_the_sdk_does_not_retry(status: int) -> None:
    gemini = ScriptedGemini([error_reply(status, "try later"), function_call_reply("finalize_context", {"summary": "s"})])
    with pytest.raises(ModelTransientError):
        await make_model(gemini).request(decide_request(), CallContext())
    assert len(gemini.requests) == 1  # exactly one HTTP request: the workflow owns attempts
    assert gemini.remaining == 1


async def test_retry_info_becomes_the_next_attempts_delay(tmp_path) -> None:
    gemini = ScriptedGemini([error_reply(429, "quota", retry_delay_s=7)])
    err = await attempt(model_activities(tmp_path, MODEL, make_model(gemini)), decide_request())
    assert isinstance(err, ApplicationError) and not err.non_retryable
    assert err.type == "ModelTransientError"
    assert err.next_retry_delay is not None and err.next_retry_delay.total_seconds() == 7


async def test_connection_failure_is_retryable() -> None:
    gemini = ScriptedGemini([connection_error_reply()])
    with pytest.raises(ModelTransientError, match="ConnectError"):
        await make_model(gemini).request(decide_request(), CallContext())


@pytest.mark.parametrize(
    ("status", "message", "expected"),
    [
        (400, "API key not valid. Please pass a valid API key.", "Gemini rejected the API key (400): set GEMINI_API_KEY"),
        (403, "Permission denied on resource project", "Gemini refused access (403 PERMISSION_DENIED)"),
        (404, "models/gemini-9 is not found", "Gemini does not serve model 'gemini-2.5-flash' (404)"),
        (400, "Request contains an invalid argument.", "Gemini rejected the request (400 INVALID_ARGUMENT)"),
        (400, "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
         "the prompt is longer than gemini-2.5-flash's context window (400): lower --tokens"),
    ],
)
async def test_client_errors_are_non_retryable_with_a_clear_message(
    tmp_path, status: int, message: str, expected: str
) -> None:
    gemini = ScriptedGemini([error_reply(status, message)])
    err = await attempt(model_activities(tmp_path, MODEL, make_model(gemini)), decide_request())
    assert isinstance(err, ApplicationError)
    assert err.type == "ModelError" and err.non_retryable
    assert err.message.startswith(expected)
    assert "\n" not in err.message
    assert len(gemini.requests) == 1


async def test_api_key_never_appears_in_errors_or_request_bodies(tmp_path) -> None:
    gemini = ScriptedGemini(
        [
            text_reply("nope", usage_metadata(10, 1)),
            error_reply(400, f"API key not valid: {KEY}"),
            error_reply(500, f"backend echoed key={KEY}"),
        ]
    )
    acts = model_activities(tmp_path, MODEL, make_model(gemini))
    for _ in range(2):
        err = await attempt(acts, decide_request())
        assert isinstance(err, ApplicationError)
        assert KEY not in str(err) and KEY not in repr(err.details)
    assert KEY not in repr(GeminiCredentials(api_key=KEY))
    for request in gemini.requests:
        assert request.headers["x-goog-api-key"] == KEY  # sent only in its header
        assert KEY not in request.text_without_key_header()


async def test_failure_during_reask_reports_the_usage_already_spent(tmp_path) -> None:
    gemini = ScriptedGemini([text_reply("hmm", usage_metadata(900, 40, 60, 300)), error_reply(429, "quota")])
    err = await attempt(model_activities(tmp_path, MODEL, make_model(gemini)), decide_request())
    assert isinstance(err, ApplicationError)
    spent = spent_of(err)
    assert spent.usage == TokenUsage(input_tokens=900, output_tokens=40, thinking_tokens=60, cached_tokens=300)
    assert spent.calls == 2 and spent.cost_micros > 0 and spent.in_flight_micros == 0


async def test_reask_is_not_sent_when_it_could_pass_the_allowance(tmp_path) -> None:
    gemini = ScriptedGemini([text_reply("hmm", usage_metadata(900, 40))])
    acts = model_activities(tmp_path, MODEL, make_model(gemini))
    req = decide_request()
    one_call = acts.pricer.estimate(MODEL, acts._prompt_tokens(req), req.max_output_tokens)
    out = await attempt(acts, req, allowance=one_call + 10)
    assert not isinstance(out, ApplicationError) and isinstance(out.result, DecisionOut)
    assert out.result.decision.action == "invalid" and "no budget left" in (out.result.decision.error or "")
    assert len(gemini.requests) == 1 and out.spent.cost_micros <= one_call + 10


async def test_a_first_call_that_cannot_fit_is_refused_before_any_request(tmp_path) -> None:
    gemini = ScriptedGemini([function_call_reply("finalize_context", {"summary": "s"})])
    err = await attempt(model_activities(tmp_path, MODEL, make_model(gemini)), decide_request(), allowance=5)
    assert isinstance(err, ApplicationError) and err.type == "BudgetError" and err.non_retryable
    assert gemini.requests == [] and spent_of(err).cost_micros == 0


# the stall (10 s) is far beyond the guard (0.5 s) and the bound (8 s): a loaded machine slows the
# request setup by seconds (2.5 s against a 3 s stall failed at load 8; 2.8 s measured at load 36)
@pytest.mark.parametrize("delays", [(10.0,), (0.0, 10.0)], ids=["before-first-chunk", "between-chunks"])
async def test_stream_guard_cuts_a_silent_stream_and_closes_the_connection(delays: tuple[float, ...]) -> None:
    first = function_call_reply("finalize_context", {"summary": "late"}, usage_metadata(400, 5), thought="…")
    gemini = ScriptedGemini([stalled_reply(first, delays)])
    guard = StreamGuard(first_chunk_timeout_s=0.5, inter_chunk_timeout_s=0.5)
    ctx = CallContext(stream_guard=guard)
    started = time.monotonic()
    with pytest.raises(ModelStalledError, match="first chunk" if len(delays) == 1 else "next chunk"):
        await make_model(gemini).request(decide_request(), ctx)
    assert time.monotonic() - started < 8
    assert gemini.closed_streams == 1  # the HTTP response (the connection) was closed


async def test_a_stalled_attempt_is_retryable_and_books_what_it_used(tmp_path) -> None:
    usage_first = {"candidates": [{"content": {"role": "model", "parts": [{"text": "thinking", "thought": True}]},
                                   "index": 0}], "usageMetadata": usage_metadata(400, 3)}
    reply = function_call_reply("finalize_context", {"summary": "late"}, usage_metadata(400, 5))
    gemini = ScriptedGemini([stalled_reply(reply.__class__(200, reply.body, chunks=(usage_first, reply.body)),
                                           (0.0, 3.0))])
    err = await attempt(model_activities(tmp_path, MODEL, make_model(gemini)), decide_request(),
                        stream=StreamGuard(first_chunk_timeout_s=1, inter_chunk_timeout_s=0.5))
    assert isinstance(err, ApplicationError) and err.type == "ModelStalled" and not err.non_retryable
    assert spent_of(err).usage.input_tokens == 400 and spent_of(err).calls == 1


def test_credentials_come_from_the_worker_environment() -> None:
    assert GeminiCredentials.from_env({"GEMINI_API_KEY": "a"}).api_key == "a"
    assert GeminiCredentials.from_env({"GOOGLE_API_KEY": "b"}).api_key == "b"
    vertex = GeminiCredentials.from_env(
        {"GOOGLE_GENAI_USE_VERTEXAI": "true", "GOOGLE_CLOUD_PROJECT": "p", "GOOGLE_CLOUD_LOCATION": "us-central1"}
    )
    assert vertex.vertexai and vertex.project == "p" and vertex.api_key is None
    with pytest.raises(ModelError, match="set GEMINI_API_KEY"):
        GeminiCredentials.from_env({})
    with pytest.raises(ModelError, match="GOOGLE_CLOUD_PROJECT"):
        GeminiCredentials.from_env({"GOOGLE_GENAI_USE_VERTEXAI": "1"})


async def test_missing_credentials_fail_with_model_error(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ModelError, match="use --model offline"):
        GeminiModel().check_credentials()
    with pytest.raises(ModelError, match="use --model offline"):
        await GeminiModel().request(decide_request(), CallContext())


def test_model_call_errors_are_model_errors() -> None:
    assert issubclass(ModelCallError, ModelError) and ModelTransientError.retryable and not ModelCallError.retryable


async def test_a_stream_cut_before_its_first_chunk_is_booked_at_the_prompt(tmp_path) -> None:
    """#29: the guard cut the stream before any chunk and the attempt was booked $0 — but the provider had
    the prompt and bills it. Booked now as a failed attempt at the prompt we counted × the input price."""
    reply = function_call_reply("finalize_context", {"summary": "late"}, usage_metadata(400, 5))
    gemini = ScriptedGemini([stalled_reply(reply, (3.0,))])
    acts = model_activities(tmp_path, MODEL, make_model(gemini))
    req = decide_request()
    err = await attempt(acts, req, stream=StreamGuard(first_chunk_timeout_s=0.5, inter_chunk_timeout_s=0.5))
    assert isinstance(err, ApplicationError) and err.type == "ModelStalled" and not err.non_retryable
    spent = spent_of(err)
    prompt = acts._prompt_tokens(req)
    assert spent.usage == TokenUsage(input_tokens=prompt) and spent.calls == 1 and spent.in_flight_micros == 0
    assert spent.cost_micros == acts.pricer.cost(MODEL, TokenUsage(input_tokens=prompt), 1) > 0
    assert gemini.closed_streams == 1


async def test_a_refused_request_is_not_booked_at_the_prompt(tmp_path) -> None:
    """The other side of the rule: a 4xx/429 means the provider did not take the prompt — nothing billed."""
    gemini = ScriptedGemini([error_reply(429, "quota", "RESOURCE_EXHAUSTED")])
    err = await attempt(model_activities(tmp_path, MODEL, make_model(gemini)), decide_request())
    assert isinstance(err, ApplicationError) and spent_of(err).usage == TokenUsage()
    assert spent_of(err).cost_micros == 0
