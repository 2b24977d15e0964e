"""The one interface every model provider implements, and what a call can see.

``Model.request(ModelRequest, CallContext) -> ModelResponse``: one HTTP call
(or one deterministic answer). Providers run only on the worker, inside the
``model.request`` activity, which owns corrective re-asks, parsing, pricing,
the budget check before each HTTP call and error reporting; a provider only
talks to its backend, keeps the :class:`UsageMeter` current while it streams
(so a cancelled or stalled call is booked with what it had consumed), and
raises :class:`ModelCallError` with the usage it knows. Credentials are read
from the worker's environment when a provider is built, never from workflow
input.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from durable_navigator.navcore.run.decision import TokenUsage
from durable_navigator.navtypes.errors import ModelError
from durable_navigator.navcore.model.model import ModelRequest, ModelResponse
from durable_navigator.navcore.navigator.model_calls import StreamGuard

__all__ = [
    "Model",
    "CallContext",
    "UsageMeter",
    "ModelCallError",
    "ModelTransientError",
    "ModelStalledError",
    "TRANSIENT_ERROR_TYPE",
    "STALLED_ERROR_TYPE",
    "approx_tokens",
    "redact",
]

TRANSIENT_ERROR_TYPE = "ModelTransientError"
STALLED_ERROR_TYPE = "ModelStalled"


def approx_tokens(text: str) -> int:
    """A cheap token estimate (~4 characters per token), for output the provider did not count."""
    return (len(text) + 3) // 4


def redact(text: str, secrets: tuple[str, ...]) -> str:
    """``text`` on one line with every secret replaced by ``[redacted]`` (providers' error messages)."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "[redacted]")
    return " ".join(text.split())


class UsageMeter:
    """What the HTTP calls of one attempt consumed, kept current while they run.

    ``begin`` opens a call with the prompt's token count; streaming providers
    ``observe`` the cumulative usage the backend reports and the ``text`` they
    receive; ``end`` closes the call with its final usage. :meth:`settle`
    closes a call that ended abnormally with the best knowledge: the usage
    reported so far, else the prompt plus the output text received, else — for a
    call we cut before its first chunk — the prompt alone.
    """

    def __init__(self) -> None:
        self.usage = TokenUsage()
        self.calls = 0
        self._open = False
        self._prompt_tokens = 0
        self._reported: TokenUsage | None = None
        self._text_chars = 0

    @property
    def in_flight(self) -> bool:
        """True while an HTTP call is open."""
        return self._open

    def begin(self, prompt_tokens: int) -> None:
        """An HTTP call starts (closing a previous open one first)."""
        if self._open:
            self.settle()
        self._open, self._prompt_tokens, self._reported, self._text_chars = True, prompt_tokens, None, 0

    def observe(self, usage: TokenUsage) -> None:
        """The backend's cumulative usage of the open call so far."""
        self._reported = usage

    def text(self, delta: str) -> None:
        """Output text received on the open call."""
        self._text_chars += len(delta)

    def end(self, usage: TokenUsage) -> None:
        """Close the open call with its final usage."""
        self.usage, self.calls, self._open = self.usage + usage, self.calls + 1, False

    def settle(self, known: TokenUsage | None = None, *, cut: bool = False) -> None:
        """Close an open call that ended abnormally (cancelled, stalled, failed).

        ``cut``: we ended the call after the provider had taken the request (the stream guard, a
        timeout, a cancellation) — providers bill the prompt they were sent even when no chunk came
        back, so with nothing reported the call is booked at the prompt we counted.
        """
        if not self._open:
            return
        if known is not None and known != TokenUsage():
            used = known
        elif self._reported is not None:
            used = self._reported
        elif self._text_chars:
            # the prompt was read and output had started: both are billed
            used = TokenUsage(input_tokens=self._prompt_tokens, output_tokens=(self._text_chars + 3) // 4)
        elif cut:
            used = TokenUsage(input_tokens=self._prompt_tokens)
        else:
            # refused before the provider read the prompt (4xx, 429, no connection): nothing billed
            used = known or TokenUsage()
        self.end(used)


@dataclass
class CallContext:
    """What a provider may use during one call besides the request."""

    meter: UsageMeter = field(default_factory=UsageMeter)
    #: called with a short progress note (the activity heartbeats with it)
    heartbeat: Callable[[str], None] = field(default=lambda note: None)
    stream_guard: StreamGuard = field(default_factory=StreamGuard)
    #: the workflow's attempt number of this model call (1-based)
    attempt: int = 1
    #: prompt tokens of the request (counted by ``model.prepare``)
    prompt_tokens: int = 0


class ModelCallError(ModelError):
    """A provider failure, with what the failed HTTP call consumed.

    Non-retryable by default (a 4xx, a refused request): the message says what
    to do. See :class:`ModelTransientError` for failures worth another attempt.
    """

    kind = ModelError.kind
    retryable = False

    def __init__(self, message: str, usage: TokenUsage | None = None, *, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.usage = usage or TokenUsage()
        self.retry_after_s = retry_after_s


class ModelTransientError(ModelCallError):
    """408 / 429 / 5xx / transport failures: another attempt may succeed (after ``retry_after_s``)."""

    kind = TRANSIENT_ERROR_TYPE
    retryable = True


class ModelStalledError(ModelTransientError):
    """The stream stayed silent past the stream guard; the connection was closed."""

    kind = STALLED_ERROR_TYPE


@runtime_checkable
class Model(Protocol):
    """A source of model answers (one per model name per worker)."""

    async def request(self, req: ModelRequest, ctx: CallContext) -> ModelResponse:
        """Answer one request with one HTTP call (or one deterministic answer)."""
        ...
