"""Classify failures of OpenAI-compatible endpoints: retryable or not, one clear line, no secrets.

408, 409, 429 and 5xx, and transport failures (refused connections, resets,
timeouts), are worth another attempt: :class:`ModelTransientError`, carrying
the server's ``Retry-After`` (``retry-after-ms`` first, as OpenAI sends it) as
the next attempt's delay. Any other 4xx cannot succeed on retry:
:class:`ModelCallError`, whose message says what to do — a prompt longer than
the model's context names the settings that shorten it, a rejected key names
the variable the worker reads it from, an exhausted quota (OpenAI answers it
with a 429) says to add credit instead of being retried. The key is redacted
from every message.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Any

import openai

from durable_navigator.activities.models.base import ModelCallError, ModelTransientError, redact
from durable_navigator.navcore.run.decision import TokenUsage
from durable_navigator.navcore.model.endpoints import Endpoint

__all__ = ["classify_openai_error", "retry_after_seconds", "is_context_length_error", "MAX_RETRY_AFTER_S"]

_RETRYABLE_4XX = frozenset({408, 409, 429})
#: a Retry-After longer than this is taken as this (a run parked for a day helps nobody)
MAX_RETRY_AFTER_S = 3600.0
#: how servers say "the prompt does not fit": OpenAI / OpenRouter / vLLM ("maximum context length"),
#: llama.cpp ("exceeds the available context size"), LM Studio and gateways ("context window", "too long")
_CONTEXT = re.compile(
    r"context[_ ]length|maximum context|context (window|size)|too many tokens|prompt is too long|"
    r"exceed\w*[_ ]context|input is too long",
    re.IGNORECASE,
)
_QUOTA_CODES = frozenset({"insufficient_quota", "billing_hard_limit_reached"})


def retry_after_seconds(headers: Any) -> float | None:
    """The delay the server asks for: ``retry-after-ms``, else ``retry-after`` (seconds or an HTTP date)."""
    if headers is None:
        return None
    millis = headers.get("retry-after-ms")
    try:
        if millis is not None:
            return _clamp(float(millis) / 1000.0)
    except ValueError:
        pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return _clamp(float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return _clamp((when - datetime.now(timezone.utc)).total_seconds())


def _clamp(seconds: float) -> float:
    return min(max(seconds, 0.0), MAX_RETRY_AFTER_S)


def _detail(exc: openai.APIError) -> str:
    """The server's own message (the body's ``error.message`` / ``message``), else the SDK's."""
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return inner["message"]
        if isinstance(inner, str):
            return inner
    return str(exc.message or exc)


def is_context_length_error(exc: openai.APIError) -> bool:
    """True when the server refused the prompt as longer than the model's context."""
    return (exc.code or "") == "context_length_exceeded" or bool(_CONTEXT.search(_detail(exc)))


def _describe_4xx(code: int, detail: str, where: str, model: str, endpoint: Endpoint) -> str:
    lowered = detail.lower()
    if code == 401 or (code in (400, 403) and ("api key" in lowered or "api_key" in lowered)):
        var = endpoint.api_key_env
        how = f"set {var} to a valid key on the worker" if var else "give the endpoint an api_key_env in navigator.yaml"
        return f"{where} rejected the API key ({code}): {how}"
    if code == 403:
        return f"{where} refused access to {model!r} ({code}): {detail}; check the key's permissions for that model"
    if code == 404:
        return (f"{where} does not serve model {model!r} ({code}): {detail}; check the model name "
                "(e.g. `ollama list` on an Ollama server) and the endpoint's base_url")
    return f"{where} rejected the request ({code}): {detail}; fix the request or the endpoint's settings"


def classify_openai_error(
    exc: Exception, *, endpoint_name: str, endpoint: Endpoint, model: str, secrets: tuple[str, ...],
    usage: TokenUsage | None = None,
) -> ModelCallError:
    """Turn an SDK/transport failure into a model-call error, retryable or not."""
    spent = usage or TokenUsage()
    where = f"endpoint {endpoint_name!r} ({endpoint.base_url})"
    if isinstance(exc, openai.APIStatusError):
        code = int(exc.status_code)
        detail = redact(_detail(exc), secrets)[:300]
        if is_context_length_error(exc):
            message = (f"the prompt is longer than {model}'s context window ({code} from {where}): lower --tokens "
                       "(the map's token budget) or the profile's planning map_excerpt_chars, or use a model with a "
                       "longer context (on a local server: raise its context size, e.g. Ollama's num_ctx or "
                       "llama.cpp's --ctx-size)")
            return ModelCallError(redact(message, secrets), spent)
        if code == 429 and (exc.code or "") in _QUOTA_CODES:
            return ModelCallError(redact(f"{where} says the account is out of quota ({code}): {detail}; add "
                                         "credit or raise the account's limit, then run again", secrets), spent)
        if code in _RETRYABLE_4XX or code >= 500:
            kind = "rate limit" if code == 429 else "conflict" if code == 409 else "timeout" if code == 408 \
                else "server error"
            message = f"{where} {kind} ({code}) for {model}: {detail}; retried with backoff"
            return ModelTransientError(redact(message, secrets), spent,
                                       retry_after_s=retry_after_seconds(exc.response.headers))
        return ModelCallError(redact(_describe_4xx(code, detail, where, model, endpoint), secrets), spent)
    if isinstance(exc, openai.APIConnectionError):
        # refused connections, resets, DNS failures and timeouts: worth another attempt
        cause = exc.__cause__.__class__.__name__ if exc.__cause__ is not None else exc.__class__.__name__
        message = (f"could not reach {where} for {model} ({cause}); is the server running? retried with backoff")
        return ModelTransientError(redact(message, secrets), spent)
    if isinstance(exc, openai.APIError):
        # an error event inside a stream (no HTTP status): the server's own words decide
        detail = redact(_detail(exc), secrets)[:300]
        if is_context_length_error(exc):
            return ModelCallError(redact(f"the prompt is longer than {model}'s context window ({where}: {detail}); "
                                         "lower --tokens or use a model with a longer context", secrets), spent)
        return ModelTransientError(redact(f"{where} reported an error mid-stream for {model}: {detail}", secrets),
                                   spent)
    return ModelTransientError(
        redact(f"{where} call failed for {model} ({exc.__class__.__name__}: {exc})", secrets)[:500], spent)
