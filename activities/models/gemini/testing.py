"""A scripted HTTP layer under the real ``google.genai.Client``: no network, ever.

Only the transport is replaced (an ``httpx.AsyncBaseTransport``), so request
building, serialization, streaming (SSE) parsing, error mapping and the SDK's
retry settings all run exactly as in production. Queue replies built with
:func:`function_call_reply`, :func:`text_reply`, :func:`error_reply`; each
HTTP request consumes the next one, in order, and is recorded in
:attr:`ScriptedGemini.requests` so tests can assert what was sent (prompt,
tools, tool config) and that the key travelled only in its header.

Example::

    gemini = ScriptedGemini([function_call_reply("finalize_context", {"summary": "done"})])
    provider = GeminiProvider(credentials=GeminiCredentials(api_key="k"),
                              transport=gemini.transport)
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

import httpx

__all__ = [
    "ScriptedReply",
    "RecordedRequest",
    "ScriptedGemini",
    "usage_metadata",
    "function_call_reply",
    "text_reply",
    "empty_reply",
    "error_reply",
    "stalled_reply",
    "connection_error_reply",
]

#: the canonical reason text of the statuses tests script
_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    408: "DEADLINE_EXCEEDED",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}


@dataclass(frozen=True)
class ScriptedReply:
    """One HTTP reply: a status and a JSON body, or SSE chunks for streamed calls.

    ``status`` 0 means no reply: the connection fails.
    """

    status: int
    body: dict[str, Any]
    #: bodies of the SSE events of a streamed reply; default: ``body`` as one event
    chunks: tuple[dict[str, Any], ...] = ()
    #: seconds the server stays silent before each streamed event (a stalled stream)
    delays: tuple[float, ...] = ()
    #: extra response headers (e.g. ``Retry-After``)
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class RecordedRequest:
    """What the SDK sent: method, path, query, headers (lower-case) and JSON body."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def streamed(self) -> bool:
        """True for ``:streamGenerateContent`` calls."""
        return self.path.endswith(":streamGenerateContent")

    def text_without_key_header(self) -> str:
        """Everything recorded except the API-key header: for leak assertions."""
        headers = {k: v for k, v in self.headers.items() if k != "x-goog-api-key"}
        return json.dumps([self.method, self.path, self.query, headers, self.body])


def usage_metadata(
    prompt: int = 0, candidates: int = 0, thoughts: int = 0, cached: int = 0
) -> dict[str, int]:
    """A REST ``usageMetadata`` object (only non-zero counts, like the API)."""
    raw = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": candidates,
        "thoughtsTokenCount": thoughts,
        "cachedContentTokenCount": cached,
    }
    meta = {k: v for k, v in raw.items() if v}
    meta["totalTokenCount"] = prompt + candidates + thoughts
    return meta


def _candidate_body(parts: list[dict[str, Any]], usage: dict[str, int] | None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
        ],
        "modelVersion": "scripted",
    }
    if usage is not None:
        body["usageMetadata"] = usage
    return body


def function_call_reply(
    name: str,
    args: dict[str, Any],
    usage: dict[str, int] | None = None,
    thought: str | None = None,
) -> ScriptedReply:
    """A reply with one function call; ``thought`` streams first as its own chunk."""
    body = _candidate_body([{"functionCall": {"name": name, "args": args}}], usage)
    if thought is None:
        return ScriptedReply(200, body)
    first = _candidate_body([{"text": thought, "thought": True}], None)
    return ScriptedReply(200, body, chunks=(first, body))


def text_reply(text: str, usage: dict[str, int] | None = None) -> ScriptedReply:
    """A reply with plain text and no function call (a malformed navigator answer)."""
    return ScriptedReply(200, _candidate_body([{"text": text}], usage))


def empty_reply(usage: dict[str, int] | None = None) -> ScriptedReply:
    """A reply without candidates, like a prompt blocked by safety filters."""
    body: dict[str, Any] = {"promptFeedback": {"blockReason": "OTHER"}}
    if usage is not None:
        body["usageMetadata"] = usage
    return ScriptedReply(200, body)


def error_reply(
    status: int, message: str = "scripted error", reason: str | None = None, retry_delay_s: float | None = None
) -> ScriptedReply:
    """A Google API error body with ``status`` (429, 500, 400, 403, ...), optionally with a RetryInfo."""
    error: dict[str, Any] = {
        "code": status,
        "message": message,
        "status": _STATUS_NAMES.get(status, "UNKNOWN"),
    }
    details: list[dict[str, Any]] = []
    if reason is not None:
        details.append({"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason})
    if retry_delay_s is not None:
        details.append({"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{retry_delay_s:g}s"})
    if details:
        error["details"] = details
    return ScriptedReply(status, {"error": error})


def stalled_reply(reply: ScriptedReply, delays: tuple[float, ...]) -> ScriptedReply:
    """``reply`` streamed with the server silent ``delays[i]`` seconds before event ``i``."""
    events = reply.chunks or (reply.body,)
    return ScriptedReply(reply.status, reply.body, chunks=events, delays=delays)


class _SlowStream(httpx.AsyncByteStream):
    """SSE events with pauses; remembers whether the client closed it (the connection)."""

    def __init__(self, events: tuple[dict[str, Any], ...], delays: tuple[float, ...], owner: "ScriptedGemini") -> None:
        self._events, self._delays, self._owner = events, delays, owner

    async def __aiter__(self):  # type: ignore[override]
        for i, event in enumerate(self._events):
            delay = self._delays[i] if i < len(self._delays) else 0.0
            if delay:
                await asyncio.sleep(delay)
            yield f"data: {json.dumps(event)}\r\n\r\n".encode()

    async def aclose(self) -> None:
        self._owner.closed_streams += 1


def connection_error_reply() -> ScriptedReply:
    """No HTTP reply at all: the transport raises ``httpx.ConnectError``."""
    return ScriptedReply(0, {})


@dataclass
class ScriptedGemini:
    """Serves queued replies to the SDK and records every request."""

    replies: list[ScriptedReply] = field(default_factory=list)
    requests: list[RecordedRequest] = field(default_factory=list)
    #: streamed responses the client closed (a stall cut by the stream guard closes one)
    closed_streams: int = 0

    def __post_init__(self) -> None:
        self.transport: httpx.AsyncBaseTransport = httpx.MockTransport(self._handle)

    def queue(self, replies: Iterable[ScriptedReply]) -> None:
        """Append more replies to the script."""
        self.replies.extend(replies)

    @property
    def remaining(self) -> int:
        """Replies not yet served."""
        return len(self.replies)

    def _handle(self, request: httpx.Request) -> httpx.Response:
        raw = request.content.decode("utf-8") if request.content else "{}"
        recorded = RecordedRequest(
            method=request.method,
            path=request.url.path,
            query=parse_qs(request.url.query.decode("ascii")),
            headers={k.lower(): v for k, v in request.headers.items()},
            body=json.loads(raw),
        )
        self.requests.append(recorded)
        if not self.replies:
            raise AssertionError(
                f"ScriptedGemini ran out of replies at request {len(self.requests)} "
                f"({recorded.path}); queue another reply"
            )
        reply = self.replies.pop(0)
        if reply.status == 0:
            raise httpx.ConnectError("scripted connection failure", request=request)
        headers = {"content-type": "application/json", **dict(reply.headers)}
        if reply.status != 200 or not recorded.streamed:
            return httpx.Response(reply.status, json=reply.body, headers=headers)
        events = reply.chunks or (reply.body,)
        if reply.delays:
            return httpx.Response(200, stream=_SlowStream(events, reply.delays, self),
                                  headers={"content-type": "text/event-stream"})
        sse = "".join(f"data: {json.dumps(event)}\r\n\r\n" for event in events)
        return httpx.Response(200, content=sse.encode(), headers={"content-type": "text/event-stream"})
