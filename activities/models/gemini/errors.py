"""Classify Gemini failures: retryable or not, one clear line, no secrets.

408, 429, 5xx and transport failures (connection resets, timeouts) are worth
another attempt: :class:`ModelTransientError`, carrying the server's
``RetryInfo.retryDelay`` (or a ``Retry-After`` header) as the next attempt's
delay. Any other 4xx cannot succeed on retry: :class:`ModelCallError`, whose
message says what to do. The API key is redacted from every message.
"""

from __future__ import annotations

import re
from typing import Any

import httpx
from google.genai import errors as genai_errors

from durable_navigator.activities.models.base import ModelCallError, ModelTransientError, redact
from durable_navigator.navcore.run.decision import TokenUsage

__all__ = ["classify_api_error", "redact", "retry_after_seconds"]

#: HTTP statuses worth retrying: timeout, rate limit / quota, and server errors
_RETRYABLE_4XX = frozenset({408, 429})
_DELAY = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")


def retry_after_seconds(exc: genai_errors.APIError) -> float | None:
    """The delay the server asks for: ``RetryInfo.retryDelay`` ("12s") or the ``Retry-After`` header."""
    details: Any = (exc.details or {}).get("error", {}).get("details", []) if isinstance(exc.details, dict) else []
    for item in details if isinstance(details, list) else []:
        if isinstance(item, dict) and str(item.get("@type", "")).endswith("google.rpc.RetryInfo"):
            match = _DELAY.match(str(item.get("retryDelay", "")))
            if match:
                return float(match.group(1))
    response = getattr(exc, "response", None)
    header = getattr(response, "headers", {}).get("retry-after") if response is not None else None
    try:
        return float(header) if header is not None else None
    except ValueError:
        return None


def _describe_4xx(code: int, status: str, detail: str, model: str) -> str:
    """The user-facing sentence for a non-retryable client error."""
    lowered = detail.lower()
    if "api key" in lowered or "api_key" in lowered or code == 401:
        return f"Gemini rejected the API key ({code}): set GEMINI_API_KEY to a valid key on the worker"
    if code == 403:
        return f"Gemini refused access ({code} {status}): check that the key or project may use {model} ({detail})"
    if code == 404:
        return f"Gemini does not serve model {model!r} ({code}): pick a supported gemini-* model"
    if "token" in lowered and ("exceed" in lowered or "too long" in lowered or "limit" in lowered):
        return (f"the prompt is longer than {model}'s context window ({code}): lower --tokens or the "
                "planning map excerpt, or use a model with a longer context")
    return f"Gemini rejected the request ({code} {status}): {detail}; fix the request or model settings"


def classify_api_error(
    exc: Exception, model: str, secrets: tuple[str, ...], usage: TokenUsage | None = None
) -> ModelCallError:
    """Turn an SDK/transport failure into a model-call error, retryable or not."""
    spent = usage or TokenUsage()
    if isinstance(exc, genai_errors.APIError):
        code = int(exc.code or 0)
        status = str(exc.status or "")
        detail = redact(str(exc.message or ""), secrets)[:300]
        if code in _RETRYABLE_4XX or code >= 500:
            kind = "rate limit or quota" if code == 429 else "server error"
            message = f"Gemini {kind} ({code} {status}) for {model}: {detail}; retried with backoff"
            return ModelTransientError(redact(message, secrets), spent, retry_after_s=retry_after_seconds(exc))
        return ModelCallError(redact(_describe_4xx(code, status, detail, model), secrets), spent)
    if isinstance(exc, httpx.HTTPError):
        # Connection resets, DNS failures and timeouts: worth another attempt.
        message = f"Gemini request failed ({exc.__class__.__name__}) for {model}; retried with backoff"
        return ModelTransientError(redact(message, secrets), spent)
    return ModelTransientError(redact(f"Gemini call failed ({exc.__class__.__name__}: {exc}) for {model}", secrets),
                               spent)
