"""``<endpoint>:<model>`` through the ``openai`` SDK: OpenAI, OpenRouter, Ollama, vLLM, llama.cpp, LM Studio.

After ``temporalio.contrib.openai_agents`` and pydantic-ai's OpenAI model:

* One client per model on the worker, with the endpoint's base URL and the key
  read from the worker's environment variable the endpoint names
  (:class:`OpenAICredentials`) — never from workflow input. A server without a
  key (Ollama) gets a placeholder, never another endpoint's key.
* The SDK's own retries are off (``max_retries=0``): the workflow's model-call
  block owns attempts. Errors are classified here (:mod:`.errors`).
* One request is one streamed HTTP call (``stream_options.include_usage``):
  every chunk heartbeats and updates the usage meter; the shared stream guard
  cuts a silent stream (first chunk / between chunks) and closes the connection.
* Usage: ``prompt_tokens`` (cached ones in ``prompt_tokens_details``) and
  ``completion_tokens``, of which ``completion_tokens_details.reasoning_tokens``
  are booked as thinking. A server that reports no usage is booked at the
  prompt we counted plus the text it streamed, and the worker log says so.
* Functions: the request's tool specs through :mod:`.schema` (``native``), or
  the JSON-output fallback (``json``) — the endpoint's ``tool_calling`` setting
  decides, never a guess (:mod:`.convert`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import openai
from openai import AsyncOpenAI

from durable_navigator.activities.models.base import CallContext, ModelCallError
from durable_navigator.activities.models.openai.convert import calls_from_json_text, chat_messages, parse_arguments
from durable_navigator.activities.models.openai.errors import classify_openai_error
from durable_navigator.activities.models.openai.schema import tool_declarations
from durable_navigator.activities.models.stream import guarded_chunks
from durable_navigator.navcore.run.decision import TokenUsage
from durable_navigator.navcore.model.endpoints import Endpoint
from durable_navigator.navcore.model.model import ModelRequest, ModelResponse, ToolCallOut
from durable_navigator.navtypes.errors import ModelError

__all__ = ["OpenAICredentials", "OpenAIModel", "build_client", "usage_from_openai", "NO_KEY"]

#: what a server that needs no key is sent (the SDK insists on one); never a real key
NO_KEY = "no-key"

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class OpenAICredentials:
    """The key of one endpoint, read from the worker's environment (``None``: the server needs none)."""

    api_key: str | None = field(default=None, repr=False)

    @classmethod
    def from_env(cls, name: str, endpoint: Endpoint, env: Mapping[str, str] | None = None) -> "OpenAICredentials":
        """The endpoint's key from ``env`` (default: this process); ``ModelError`` when it is not set."""
        if endpoint.api_key_env is None:
            return cls(None)
        environ = os.environ if env is None else env
        key = (environ.get(endpoint.api_key_env) or "").strip()
        if not key:
            raise ModelError(
                f"endpoint {name!r} needs its API key in {endpoint.api_key_env} on the worker: set it in the "
                f"worker's environment (keys are never read from files or run input), or use --model offline"
            )
        return cls(key)

    def secrets(self) -> tuple[str, ...]:
        """Strings that must never appear in a message or log."""
        return (self.api_key,) if self.api_key else ()


def build_client(endpoint: Endpoint, creds: OpenAICredentials, transport: Any = None) -> AsyncOpenAI:
    """An ``AsyncOpenAI`` for the endpoint with SDK retries off; ``transport`` replaces only the HTTP layer."""
    http_client = openai.DefaultAsyncHttpxClient(transport=transport) if transport is not None else None
    return AsyncOpenAI(
        api_key=creds.api_key or NO_KEY,
        base_url=endpoint.base_url,
        # exactly one HTTP request per SDK call: the workflow owns attempts (and checks the budget first)
        max_retries=0,
        timeout=endpoint.request_timeout_s,
        http_client=http_client,
    )


def usage_from_openai(usage: Any) -> TokenUsage:
    """A chat-completions ``usage`` object as a :class:`TokenUsage` (reasoning split out of completion)."""
    if usage is None:
        return TokenUsage()
    prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
    completion = int(getattr(usage, "completion_tokens", 0) or 0)
    prompt_details = getattr(usage, "prompt_tokens_details", None)
    completion_details = getattr(usage, "completion_tokens_details", None)
    cached = int(getattr(prompt_details, "cached_tokens", 0) or 0) if prompt_details is not None else 0
    reasoning = int(getattr(completion_details, "reasoning_tokens", 0) or 0) if completion_details is not None else 0
    reasoning = min(reasoning, completion)  # completion_tokens includes the reasoning tokens
    return TokenUsage(input_tokens=prompt, output_tokens=completion - reasoning, thinking_tokens=reasoning,
                      cached_tokens=min(cached, prompt))


@dataclass
class _Accumulated:
    """What the stream of one call delivered so far."""

    text: list[str] = field(default_factory=list)
    reasoning_chars: int = 0
    #: tool-call index → [name, arguments text]
    calls: dict[int, list[str]] = field(default_factory=dict)
    usage: TokenUsage | None = None
    finish_reason: str | None = None
    chunks: int = 0

    def add(self, chunk: Any, ctx: CallContext) -> None:
        self.chunks += 1
        if getattr(chunk, "usage", None) is not None:
            # the usage chunk (stream_options.include_usage) comes last, with empty choices
            self.usage = usage_from_openai(chunk.usage)
            ctx.meter.observe(self.usage)
        for choice in (chunk.choices or [])[:1]:
            delta = choice.delta
            if delta is not None:
                self._delta(delta, ctx)
            if choice.finish_reason:
                self.finish_reason = choice.finish_reason

    def _delta(self, delta: Any, ctx: CallContext) -> None:
        if delta.content:
            self.text.append(delta.content)
            ctx.meter.text(delta.content)
        extra = getattr(delta, "model_extra", None) or {}
        # reasoning text: vLLM / DeepSeek / llama.cpp send reasoning_content, Ollama and OpenRouter reasoning
        thought = extra.get("reasoning_content") or extra.get("reasoning")
        if isinstance(thought, str) and thought:
            self.reasoning_chars += len(thought)
            ctx.meter.text(thought)
        for position, call in enumerate(delta.tool_calls or []):
            index = call.index if call.index is not None else position
            slot = self.calls.setdefault(index, ["", ""])
            function = call.function
            if function is None:
                continue
            if function.name and not slot[0]:
                slot[0] = function.name
            if function.arguments:
                slot[1] += function.arguments
                ctx.meter.text(function.arguments)


class OpenAIModel:
    """Models of one OpenAI-compatible endpoint (implements :class:`~activities.models.base.Model`)."""

    def __init__(
        self,
        endpoint_name: str,
        endpoint: Endpoint,
        *,
        client: AsyncOpenAI | None = None,
        credentials: OpenAICredentials | None = None,
        transport: Any = None,
    ) -> None:
        """Use ``client`` if given, else build one lazily from ``credentials`` / the worker's environment.

        Building lazily lets a worker without the key still register the model
        and answer a run with a clear, non-retryable ``ModelError``.
        """
        self.endpoint_name, self.endpoint = endpoint_name, endpoint
        self._client = client
        self._credentials = credentials
        self._transport = transport

    def check_credentials(self) -> None:
        """``ModelError`` when this worker has no key for the endpoint."""
        self._client_and_secrets()

    def _client_and_secrets(self) -> tuple[AsyncOpenAI, tuple[str, ...]]:
        if self._credentials is None:
            self._credentials = OpenAICredentials.from_env(self.endpoint_name, self.endpoint)
        if self._client is None:
            self._client = build_client(self.endpoint, self._credentials, self._transport)
        return self._client, self._credentials.secrets()

    def model_name(self, model: str) -> str:
        """What the server is asked for: ``<endpoint>:qwen2.5-coder:7b`` → ``qwen2.5-coder:7b``."""
        return model.removeprefix(f"{self.endpoint_name}:")

    def _params(self, req: ModelRequest, name: str) -> dict[str, Any]:
        json_mode = self.endpoint.tool_calling == "json"
        params: dict[str, Any] = {
            "model": name,
            "messages": chat_messages(req, json_mode),
            "stream": True,
            # the last chunk carries the call's usage (servers that ignore it: see _usage)
            "stream_options": {"include_usage": True},
            self.endpoint.max_tokens_field: req.max_output_tokens,
        }
        if self.endpoint.temperature is not None:
            params["temperature"] = self.endpoint.temperature
        if req.tools and not json_mode:
            params["tools"] = tool_declarations(req.tools)
            params["tool_choice"] = req.tool_choice
        return params

    async def request(self, req: ModelRequest, ctx: CallContext) -> ModelResponse:
        """One streamed HTTP call: text and function calls, usage from the final chunk."""
        client, secrets = self._client_and_secrets()
        name = self.model_name(req.model)
        label = f"{self.endpoint_name}:{name}"
        got = _Accumulated()
        try:
            stream = await client.chat.completions.create(**self._params(req, name))
            async for chunk in guarded_chunks(_closing(stream), ctx.stream_guard, label):
                got.add(chunk, ctx)
                ctx.heartbeat(f"{label}: chunk {got.chunks}")
        except ModelCallError as exc:  # the stream guard fired (the connection is closed)
            exc.usage = got.usage or TokenUsage()
            raise
        except openai.OpenAIError as exc:
            raise classify_openai_error(exc, endpoint_name=self.endpoint_name, endpoint=self.endpoint, model=label,
                                        secrets=secrets, usage=got.usage) from None
        text = "".join(got.text)
        calls = [parse_arguments(slot[0] or "?", slot[1]) for _, slot in sorted(got.calls.items())]
        if self.endpoint.tool_calling == "json" and req.tools and not calls:
            calls, text = calls_from_json_text(text)
        return ModelResponse(text=text, tool_calls=calls, usage=self._usage(got, ctx, text, calls, label), calls=1)

    def _usage(self, got: _Accumulated, ctx: CallContext, text: str, calls: list[ToolCallOut], label: str) -> TokenUsage:
        if got.usage is not None:
            return got.usage
        # the server ignored stream_options.include_usage: book our own count of the prompt plus the
        # streamed output, and say so (prices of such servers are usually 0, but the ledger stays honest)
        out_chars = len(text) + sum(len(c.raw_arguments or str(c.args)) for c in calls)
        estimate = TokenUsage(input_tokens=ctx.prompt_tokens, output_tokens=(out_chars + 3) // 4,
                              thinking_tokens=(got.reasoning_chars + 3) // 4)
        log.warning("%s reported no usage for a streamed call; booked at an estimate (%d prompt + %d output tokens)",
                    label, estimate.input_tokens, estimate.output_tokens + estimate.thinking_tokens)
        return estimate


async def _closing(stream: Any) -> AsyncIterator[Any]:
    """The SDK stream's chunks; closing this generator closes the HTTP response (the connection)."""
    try:
        async for chunk in stream:
            yield chunk
    finally:
        await stream.close()
