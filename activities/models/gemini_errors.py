"""Classify Gemini failures for Temporal: retryable or not, one clear line, no secrets.

408, 429, 5xx and transport failures (connection resets, timeouts) are worth
another attempt: a retryable ``ApplicationError`` of type
``ModelTransientError``, retried by the activity's retry policy. Any other 4xx
cannot succeed on retry: non-retryable, type ``ModelError``, with a message
that says what to do. The API key is redacted from every message.
"""

from __future__ import annotations

from google.genai import errors as genai_errors
from temporalio.exceptions import ApplicationError

from durable_navigator.navcore.decision import TokenUsage
from durable_navigator.navcore.errors import ModelError

__all__ = [
    "TRANSIENT_ERROR_TYPE",
    "FATAL_ERROR_TYPE",
    "GeminiCallError",
    "classify_api_error",
    "redact",
]

TRANSIENT_ERROR_TYPE = "ModelTransientError"
FATAL_ERROR_TYPE = ModelError.kind

#: HTTP statuses worth retrying: timeout, rate limit / quota, and server errors
_RETRYABLE_4XX = frozenset({408, 429})


def redact(text: str, secrets: tuple[str, ...]) -> str:
    """``text`` on one line with every secret replaced by ``[redacted]``."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "[redacted]")
    return " ".join(text.split())


def _describe_4xx(code: int, status: str, detail: str, model: str) -> str:
    """The user-facing sentence for a non-retryable client error."""
    lowered = detail.lower()
    if "api key" in lowered or "api_key" in lowered or code == 401:
        return (
            f"Gemini rejected the API key ({code}): set GEMINI_API_KEY to a valid key on the worker"
        )
    if code == 403:
        return (
            f"Gemini refused access ({code} {status}): check that the key or project may use "
            f"{model} ({detail})"
        )
    if code == 404:
        return f"Gemini does not serve model {model!r} ({code}): pick a supported gemini-* model"
    return f"Gemini rejected the request ({code} {status}): {detail}; fix the request or model settings"


class GeminiCallError(ApplicationError):
    """A classified Gemini failure; ``usage``/``calls`` are what this attempt consumed.

    The decide activity reads ``usage`` to charge a failed attempt, so tokens
    spent before a failing re-ask are not lost from the ledger.
    """

    def __init__(
        self,
        message: str,
        usage: TokenUsage,
        calls: int,
        *,
        type: str,
        non_retryable: bool = False,
    ) -> None:
        super().__init__(
            message,
            {"usage": usage.model_dump(), "calls": calls},
            type=type,
            non_retryable=non_retryable,
        )
        self.usage = usage
        self.calls = calls


def classify_api_error(
    exc: Exception,
    model: str,
    secrets: tuple[str, ...],
    usage: TokenUsage | None = None,
    calls: int = 0,
) -> GeminiCallError:
    """Turn an SDK/transport failure into a Temporal error, retryable or not."""
    spent = usage or TokenUsage()
    if isinstance(exc, genai_errors.APIError):
        code = int(exc.code or 0)
        status = str(exc.status or "")
        detail = redact(str(exc.message or ""), secrets)[:300]
        if code in _RETRYABLE_4XX or code >= 500:
            kind = "rate limit or quota" if code == 429 else "server error"
            message = f"Gemini {kind} ({code} {status}) for {model}: {detail}; Temporal retries with backoff"
            return GeminiCallError(
                redact(message, secrets), spent, calls, type=TRANSIENT_ERROR_TYPE
            )
        message = _describe_4xx(code, status, detail, model)
        return GeminiCallError(
            redact(message, secrets), spent, calls, type=FATAL_ERROR_TYPE, non_retryable=True
        )
    # Connection resets, DNS failures and timeouts: worth another attempt.
    message = f"Gemini request failed ({exc.__class__.__name__}) for {model}; Temporal retries"
    return GeminiCallError(redact(message, secrets), spent, calls, type=TRANSIENT_ERROR_TYPE)
