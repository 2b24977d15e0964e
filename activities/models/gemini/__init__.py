"""``gemini-*`` models through ``google-genai`` (after ``temporalio.contrib.google_genai``).

* The credentialed client is built on the worker from its environment
  (:class:`GeminiCredentials`), never from workflow input.
* The SDK's own retry loop is off (``HttpRetryOptions(attempts=1)``): the
  workflow's model-call block owns attempts. Errors are classified here
  (:mod:`.errors`): 408 / 429 / 5xx / transport failures are retryable (with
  the server's retry delay), other 4xx are not and say what to do.
* The API key is redacted from every message this module produces.
* One request is one HTTP call, streamed: every chunk heartbeats and updates
  the usage meter, and the stream guard cuts a silent stream (first chunk /
  between chunks) and closes the connection.
* Function declarations come from the request's provider-neutral tool specs
  (:mod:`.schema` converts them); ``tool_choice="required"`` forces a call.
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

from durable_navigator.activities.models.base import CallContext, ModelCallError
from durable_navigator.activities.models.gemini.errors import classify_api_error
from durable_navigator.activities.models.gemini.schema import function_declarations
from durable_navigator.activities.models.stream import guarded_chunks
from durable_navigator.navcore.run.decision import TokenUsage
from durable_navigator.navtypes.errors import ModelError
from durable_navigator.navcore.model.model import Message, ModelRequest, ModelResponse, ToolCallOut

__all__ = [
    "GeminiConfig",
    "GeminiCredentials",
    "GeminiModel",
    "build_client",
    "usage_from_metadata",
]


class GeminiConfig(BaseModel):
    """Knobs of the Gemini provider (worker-side configuration)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    temperature: float = Field(0.2, ge=0.0, le=2.0)
    #: per-HTTP-request timeout; the activity's start-to-close bounds the whole call
    request_timeout_s: float = Field(120.0, gt=0)
    #: thinking budget in tokens (None = the model's default, 0 = off where allowed)
    thinking_budget: int | None = Field(None, ge=-1)


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
        # attempts=1: exactly one HTTP request per SDK call; the workflow owns attempts.
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


def _contents(messages: list[Message]) -> list[types.Content]:
    """Conversation messages as Gemini contents.

    A model turn with function calls followed by a user turn answers each call
    with a function response, as the API expects after a function call: the
    call's result when the turn carries one per call (``tool_results``, a
    research executor turn), else the correction of a corrective re-ask.
    """
    out: list[types.Content] = []
    pending: list[ToolCallOut] = []
    for m in messages:
        if m.role == "assistant":
            parts = [types.Part.from_text(text=m.content)] if m.content else []
            parts += [types.Part.from_function_call(name=c.name, args=dict(c.args)) for c in m.tool_calls]
            out.append(types.Content(role="model", parts=parts or [types.Part.from_text(text="(no answer)")]))
            pending = list(m.tool_calls)
            continue
        if m.tool_results and len(m.tool_results) == len(pending):
            # a turn answering the calls with their results (a research executor turn)
            parts = [types.Part.from_function_response(name=c.name, response={"output": r})
                     for c, r in zip(pending, m.tool_results)]
        else:
            parts = [types.Part.from_function_response(name=c.name, response={"error": m.content}) for c in pending]
        parts.append(types.Part.from_text(text=m.content))
        out.append(types.Content(role="user", parts=parts))
        pending = []
    return out


class GeminiModel:
    """``gemini-*`` models (implements :class:`~activities.models.base.Model`)."""

    def __init__(
        self,
        client: genai.Client | None = None,
        *,
        config: GeminiConfig | None = None,
        credentials: GeminiCredentials | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        """Use ``client`` if given, else build one lazily from ``credentials`` / the env.

        Building lazily lets a worker without a key still register the model
        and answer a run with a clear, non-retryable ``ModelError``.
        """
        self._config = config or GeminiConfig()
        self._client = client
        self._credentials = credentials
        self._transport = transport

    def check_credentials(self) -> None:
        """``ModelError`` when this worker cannot authenticate (no key in its environment)."""
        self._client_and_secrets()

    def _client_and_secrets(self) -> tuple[genai.Client, tuple[str, ...]]:
        if self._credentials is None and self._client is None:
            self._credentials = GeminiCredentials.from_env()
        secrets = self._credentials.secrets() if self._credentials else ()
        if self._client is None:
            assert self._credentials is not None
            self._client = build_client(self._credentials, self._config, self._transport)
        return self._client, secrets

    def _request_config(self, req: ModelRequest) -> types.GenerateContentConfig:
        thinking = (
            types.ThinkingConfig(thinking_budget=self._config.thinking_budget)
            if self._config.thinking_budget is not None
            else None
        )
        tools = [types.Tool(function_declarations=function_declarations(req.tools))] if req.tools else None
        tool_config = None
        if req.tools and req.tool_choice != "auto":
            mode = (types.FunctionCallingConfigMode.ANY if req.tool_choice == "required"
                    else types.FunctionCallingConfigMode.NONE)
            tool_config = types.ToolConfig(function_calling_config=types.FunctionCallingConfig(
                mode=mode, allowed_function_names=[t.name for t in req.tools] if req.tool_choice == "required" else None,
            ))
        return types.GenerateContentConfig(
            # Stable prefix first: system instruction and tools never change
            # within a run, so Gemini's implicit cache can discount them.
            system_instruction=req.system or None,
            tools=tools,
            tool_config=tool_config,
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True) if tools else None,
            max_output_tokens=req.max_output_tokens,
            temperature=self._config.temperature,
            thinking_config=thinking,
        )

    async def request(self, req: ModelRequest, ctx: CallContext) -> ModelResponse:
        """One streamed HTTP call: text and function calls, usage from the last chunk."""
        client, secrets = self._client_and_secrets()
        model = req.model.removeprefix("models/")
        parts: list[types.Part] = []
        meta = None
        chunks = 0
        try:
            stream = await client.aio.models.generate_content_stream(
                model=model, contents=_contents(req.conversation), config=self._request_config(req)
            )
            async for chunk in guarded_chunks(stream, ctx.stream_guard, model):
                chunks += 1
                if chunk.usage_metadata is not None:
                    # each chunk carries the usage so far; the last one is the call's total
                    meta = chunk.usage_metadata
                    ctx.meter.observe(usage_from_metadata(meta))
                for cand in (chunk.candidates or [])[:1]:
                    if cand.content is not None and cand.content.parts:
                        parts.extend(cand.content.parts)
                        ctx.meter.text("".join(p.text or "" for p in cand.content.parts))
                ctx.heartbeat(f"{model}: chunk {chunks}")
        except ModelCallError as exc:  # the stream guard fired
            exc.usage = usage_from_metadata(meta)
            raise
        except (genai_errors.APIError, httpx.HTTPError) as exc:
            raise classify_api_error(exc, model, secrets, usage_from_metadata(meta)) from None
        text = "".join(p.text or "" for p in parts if p.text and not p.thought)
        calls = [
            ToolCallOut(name=str(p.function_call.name), args=dict(p.function_call.args or {}))
            for p in parts
            if p.function_call is not None
        ]
        return ModelResponse(text=text, tool_calls=calls, usage=usage_from_metadata(meta), calls=1)
