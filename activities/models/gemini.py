"""``gemini-*`` models through ``google-genai``: one navigator decision per call.

Shape (after ``temporalio.contrib.google_genai``):

* The credentialed client is built on the worker from its environment
  (:class:`GeminiCredentials`), never from workflow input.
* The SDK's own retry loop is off (``HttpRetryOptions(attempts=1)``): Temporal
  owns retries. Errors are classified here, at the activity boundary: 408, 429,
  5xx and transport failures raise a retryable ``ApplicationError`` of type
  ``ModelTransientError``; any other 4xx a non-retryable one of type
  ``ModelError`` whose one-line message says what to do. Either carries, as its
  first detail, the usage of the HTTP calls that *did* complete in this attempt
  (``{"usage": TokenUsage, "calls": n}``) so the ledger loses nothing.
* The API key is redacted from every message this module produces.
* Function calling is forced (mode ANY) over ``update_flight_plan`` and
  ``finalize_context``; a missing or malformed call gets one corrective
  re-ask, then ``ModelDecision(action="invalid")`` — never an exception.
* Streaming: each chunk heartbeats through ``DecideCall.heartbeat`` so a
  silent stream is caught by the activity's heartbeat timeout.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

import httpx
from google import genai
from google.genai import errors as genai_errors
from google.genai import types
from pydantic import BaseModel, ConfigDict, Field

from durable_navigator.activities.models.base import DecideCall
from durable_navigator.activities.models.gemini_errors import (
    FATAL_ERROR_TYPE,
    TRANSIENT_ERROR_TYPE,
    GeminiCallError,
    classify_api_error,
    redact,
)
from durable_navigator.activities.models.gemini_tools import (
    FINALIZE_FUNCTION,
    FUNCTION_NAMES,
    ParsedCall,
    forced_tool_config,
    navigator_tool,
    parse_function_call,
)
from durable_navigator.navcore.decision import ModelDecision, TokenUsage
from durable_navigator.navcore.errors import ModelError

__all__ = [
    "GeminiConfig",
    "GeminiCallError",
    "GeminiCredentials",
    "GeminiProvider",
    "TRANSIENT_ERROR_TYPE",
    "FATAL_ERROR_TYPE",
    "build_client",
    "classify_api_error",
    "usage_from_metadata",
]

#: ModelDecision caps reasoning and summary at this many characters
_TEXT_CAP = 20_000
_TRUNCATED = " …[truncated]"


class GeminiConfig(BaseModel):
    """Knobs of the Gemini provider (worker-side configuration)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    temperature: float = Field(0.2, ge=0.0, le=2.0)
    #: per-HTTP-request timeout; the activity's start-to-close bounds the whole call
    request_timeout_s: float = Field(120.0, gt=0)
    #: thinking budget in tokens (None = the model's default, 0 = off where allowed)
    thinking_budget: int | None = Field(None, ge=-1)
    #: stream responses so every chunk can heartbeat
    stream: bool = True
    #: corrective re-asks after a missing/malformed function call
    max_reasks: int = Field(1, ge=0, le=3)


@dataclass(frozen=True)
class GeminiCredentials:
    """Where the client authenticates: an API key, or Vertex AI (ADC)."""

    api_key: str | None = field(default=None, repr=False)
    vertexai: bool = False
    project: str | None = None
    location: str | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "GeminiCredentials":
        """Read the worker's environment; ``ModelError`` when nothing usable is set."""
        environ = os.environ if env is None else env
        if environ.get("GOOGLE_GENAI_USE_VERTEXAI", "").strip().lower() in {"1", "true", "yes"}:
            project = environ.get("GOOGLE_CLOUD_PROJECT") or None
            location = environ.get("GOOGLE_CLOUD_LOCATION") or None
            api_key = environ.get("GOOGLE_API_KEY") or None  # Vertex express mode
            if not api_key and not (project and location):
                raise ModelError(
                    "GOOGLE_GENAI_USE_VERTEXAI is set but GOOGLE_CLOUD_PROJECT and "
                    "GOOGLE_CLOUD_LOCATION are not: set both (and application default "
                    "credentials) on the worker"
                )
            return cls(api_key=api_key, vertexai=True, project=project, location=location)
        api_key = environ.get("GEMINI_API_KEY") or environ.get("GOOGLE_API_KEY") or None
        if not api_key:
            raise ModelError(
                "no Gemini credentials on the worker: set GEMINI_API_KEY (or GOOGLE_API_KEY, "
                "or GOOGLE_GENAI_USE_VERTEXAI with GOOGLE_CLOUD_PROJECT/LOCATION), "
                "or use --model offline"
            )
        return cls(api_key=api_key)

    def secrets(self) -> tuple[str, ...]:
        """Strings that must never appear in a message or log."""
        return (self.api_key,) if self.api_key else ()


def build_client(
    creds: GeminiCredentials,
    config: GeminiConfig,
    transport: httpx.AsyncBaseTransport | None = None,
) -> genai.Client:
    """A ``genai.Client`` with SDK retries off; ``transport`` replaces only the HTTP layer."""
    http_options = types.HttpOptions(
        timeout=int(config.request_timeout_s * 1000),
        # attempts=1: exactly one HTTP request per SDK call; Temporal retries.
        retry_options=types.HttpRetryOptions(attempts=1),
        # A custom transport also makes the SDK use httpx rather than aiohttp.
        async_client_args={"transport": transport} if transport is not None else None,
    )
    if creds.vertexai:
        return genai.Client(
            vertexai=True,
            api_key=creds.api_key,
            project=None if creds.api_key else creds.project,
            location=None if creds.api_key else creds.location,
            http_options=http_options,
        )
    return genai.Client(api_key=creds.api_key, http_options=http_options)


def usage_from_metadata(meta: types.GenerateContentResponseUsageMetadata | None) -> TokenUsage:
    """Gemini ``usage_metadata`` of one HTTP call as a :class:`TokenUsage`."""
    if meta is None:
        return TokenUsage()
    return TokenUsage(
        # Tool-use prompt tokens are billed as input, like the prompt itself.
        input_tokens=(meta.prompt_token_count or 0) + (meta.tool_use_prompt_token_count or 0),
        output_tokens=meta.candidates_token_count or 0,
        thinking_tokens=meta.thoughts_token_count or 0,
        cached_tokens=meta.cached_content_token_count or 0,
    )


def _cap(text: str) -> str:
    return text if len(text) <= _TEXT_CAP else text[: _TEXT_CAP - len(_TRUNCATED)] + _TRUNCATED


@dataclass
class _Answer:
    """What one HTTP call produced: the model's turn, its calls and its usage."""

    parts: list[types.Part]
    calls: list[types.FunctionCall]
    usage: TokenUsage


def _corrective_turns(answer: _Answer, problem: str) -> list[types.Content]:
    """The model's failed turn plus the user's correction, for the one re-ask."""
    instruction = (
        f"Your previous answer was not usable: {problem}. Answer again with exactly one "
        f"function call, {FUNCTION_NAMES[0]}(reasoning, updates) or "
        f"{FINALIZE_FUNCTION}(summary), with arguments that match the declared schema."
    )
    turns: list[types.Content] = []
    if answer.parts:
        turns.append(types.Content(role="model", parts=answer.parts))
    reply: list[types.Part] = [
        types.Part.from_function_response(name=str(c.name), response={"error": problem})
        for c in answer.calls
    ]
    reply.append(types.Part.from_text(text=instruction))
    turns.append(types.Content(role="user", parts=reply))
    return turns


class GeminiProvider:
    """Navigator decisions from ``gemini-*`` models (implements ``ModelProvider``)."""

    def __init__(
        self,
        client: genai.Client | None = None,
        *,
        config: GeminiConfig | None = None,
        credentials: GeminiCredentials | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        """Use ``client`` if given, else build one lazily from ``credentials`` / the env.

        Building lazily lets a worker without a key register the provider and
        still fail a Gemini run with a clear, non-retryable ``ModelError``.
        """
        self._config = config or GeminiConfig()
        self._client = client
        self._credentials = credentials
        self._transport = transport

    def handles(self, model: str) -> bool:
        """``gemini-*`` (optionally ``models/gemini-*``)."""
        return model.removeprefix("models/").startswith("gemini-")

    def _client_and_secrets(self) -> tuple[genai.Client, tuple[str, ...]]:
        if self._credentials is None and self._client is None:
            # ModelError propagates: the decide activity fails it non-retryably.
            self._credentials = GeminiCredentials.from_env()
        secrets = self._credentials.secrets() if self._credentials else ()
        if self._client is None:
            assert self._credentials is not None
            self._client = build_client(self._credentials, self._config, self._transport)
        return self._client, secrets

    def _request_config(self, call: DecideCall) -> types.GenerateContentConfig:
        thinking = (
            types.ThinkingConfig(thinking_budget=self._config.thinking_budget)
            if self._config.thinking_budget is not None
            else None
        )
        return types.GenerateContentConfig(
            # Stable prefix first: system instruction and tools never change
            # within a run, so Gemini's implicit cache can discount them.
            system_instruction=call.system_prompt,
            tools=[navigator_tool()],
            tool_config=forced_tool_config(),
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
            max_output_tokens=call.max_output_tokens,
            temperature=self._config.temperature,
            thinking_config=thinking,
        )

    async def _ask(
        self, client: genai.Client, call: DecideCall, contents: list[types.Content], n: int
    ) -> _Answer:
        """One HTTP call (streamed or not) → the model's parts, calls and usage."""
        config = self._request_config(call)
        model = call.model.removeprefix("models/")
        if not self._config.stream:
            call.heartbeat(f"{model}: request {n} sent")
            response = await client.aio.models.generate_content(
                model=model, contents=contents, config=config
            )
            return _collect([response])
        chunks: list[types.GenerateContentResponse] = []
        stream = await client.aio.models.generate_content_stream(
            model=model, contents=contents, config=config
        )
        async for chunk in stream:
            chunks.append(chunk)
            call.heartbeat(f"{model}: request {n}, chunk {len(chunks)}")
        return _collect(chunks)

    async def decide(self, call: DecideCall) -> ModelDecision:
        """Ask for one decision; one corrective re-ask, then ``invalid``."""
        client, secrets = self._client_and_secrets()
        contents = [types.Content(role="user", parts=[types.Part.from_text(text=call.user_prompt)])]
        usage, calls, problem = TokenUsage(), 0, ""
        for attempt in range(self._config.max_reasks + 1):
            try:
                answer = await self._ask(client, call, contents, attempt + 1)
            except (genai_errors.APIError, httpx.TransportError) as exc:
                raise classify_api_error(exc, call.model, secrets, usage, calls) from None
            usage, calls = usage + answer.usage, calls + 1
            parsed = parse_function_call(answer.calls)
            if parsed.error is None:
                return _decision(call.model, parsed, usage, calls)
            problem = redact(parsed.error, secrets)
            contents = contents + _corrective_turns(answer, problem)
        return ModelDecision(
            action="invalid",
            model=call.model,
            usage=usage,
            calls=calls,
            error=_cap(f"no usable function call after {calls} request(s): {problem}"),
        )


def _collect(chunks: list[types.GenerateContentResponse]) -> _Answer:
    """Merge a (streamed) response: all parts and calls; usage from the last chunk.

    Streamed chunks each carry the usage *so far*; the final one is the total
    of the call, so it is taken, not summed.
    """
    parts: list[types.Part] = []
    meta = None
    for chunk in chunks:
        if chunk.usage_metadata is not None:
            meta = chunk.usage_metadata
        for cand in (chunk.candidates or [])[:1]:
            if cand.content is not None and cand.content.parts:
                parts.extend(cand.content.parts)
    calls = [p.function_call for p in parts if p.function_call is not None]
    return _Answer(parts=parts, calls=calls, usage=usage_from_metadata(meta))


def _decision(model: str, parsed: ParsedCall, usage: TokenUsage, calls: int) -> ModelDecision:
    if parsed.action == "call_tools":
        return ModelDecision(
            action="call_tools", reasoning=_cap(parsed.reasoning), tool_calls=list(parsed.tool_calls),
            model=model, usage=usage, calls=calls,
        )
    if parsed.action == FINALIZE_FUNCTION:
        return ModelDecision(
            action="finalize_context",
            summary=_cap(parsed.summary or ""),
            reasoning=_cap(parsed.summary or ""),
            model=model,
            usage=usage,
            calls=calls,
        )
    return ModelDecision(
        action="update_flight_plan",
        reasoning=_cap(parsed.reasoning),
        updates=parsed.updates,
        model=model,
        usage=usage,
        calls=calls,
    )
