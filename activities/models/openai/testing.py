"""A scripted HTTP layer under the real ``openai.AsyncOpenAI`` client: no network, ever.

Only the transport is replaced (the SDK's ``httpx2`` transport interface —
the ``openai`` 3.x SDK runs on ``httpx2``, the maintained fork of ``httpx``), so
request building, SSE parsing, error mapping and the SDK's retry setting all
run exactly as in production. Queue replies built with :func:`tool_call_reply`,
:func:`text_reply`, :func:`error_reply`, :func:`stalled_reply`; each HTTP
request consumes the next one, in order, and is recorded in
:attr:`ScriptedOpenAI.requests` so tests can assert what was sent and that the
key travelled only in its header.

Example::

    server = ScriptedOpenAI([tool_call_reply("finalize_context", {"summary": "done"}, usage(900, 20))])
    model = OpenAIModel("local", endpoint, credentials=OpenAICredentials("k"), transport=server.transport)
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import httpx2  # the openai SDK's HTTP library (a dependency of openai 3.x)

__all__ = [
    "ScriptedReply",
    "RecordedRequest",
    "ScriptedOpenAI",
    "usage",
    "tool_call_reply",
    "tool_calls_reply",
    "text_reply",
    "error_reply",
    "stalled_reply",
    "connection_error_reply",
    "sse_events",
]


@dataclass(frozen=True)
class ScriptedReply:
    """One HTTP reply: SSE events (JSON bodies) for a streamed call, or an error status and body.

    ``status`` 0 means no reply: the connection fails.
    """

    status: int
    events: tuple[dict[str, Any], ...] = ()
    body: dict[str, Any] | None = None
    #: seconds the server stays silent before each event (a stalled stream)
    delays: tuple[float, ...] = ()
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class RecordedRequest:
    """What the SDK sent: method, path, headers (lower-case) and JSON body."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    def text_without_key_header(self) -> str:
        """Everything recorded except the authorization header: for leak assertions."""
        headers = {k: v for k, v in self.headers.items() if k != "authorization"}
        return json.dumps([self.method, self.path, headers, self.body])


def usage(prompt: int = 0, completion: int = 0, cached: int = 0, reasoning: int = 0) -> dict[str, Any]:
    """A chat-completions ``usage`` object (``completion`` includes ``reasoning``, as the API counts)."""
    out: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion,
                           "total_tokens": prompt + completion}
    if cached:
        out["prompt_tokens_details"] = {"cached_tokens": cached}
    if reasoning:
        out["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    return out


def _chunk(delta: dict[str, Any] | None, finish: str | None = None, use: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": 0,
                            "model": "scripted",
                            "choices": [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]}
    if use is not None:
        body["usage"] = use
    return body


def sse_events(text: str = "", calls: Iterable[tuple[str, str]] = (), use: dict[str, Any] | None = None,
               reasoning: str = "", split: int = 12) -> tuple[dict[str, Any], ...]:
    """The chunks of one streamed answer: reasoning, text, tool calls (arguments split), finish, usage."""
    events: list[dict[str, Any]] = [_chunk({"role": "assistant", "content": ""})]
    if reasoning:
        events.append(_chunk({"reasoning_content": reasoning}))
    for start in range(0, len(text), split * 4):
        events.append(_chunk({"content": text[start:start + split * 4]}))
    calls = list(calls)
    for index, (name, arguments) in enumerate(calls):
        events.append(_chunk({"tool_calls": [{"index": index, "id": f"call_{index}", "type": "function",
                                              "function": {"name": name, "arguments": ""}}]}))
        for start in range(0, len(arguments), split):
            events.append(_chunk({"tool_calls": [{"index": index,
                                                  "function": {"arguments": arguments[start:start + split]}}]}))
    events.append(_chunk({}, "tool_calls" if calls else "stop"))
    if use is not None:
        events.append(_chunk(None, use=use))
    return tuple(events)


def tool_calls_reply(calls: list[tuple[str, dict[str, Any] | str]], use: dict[str, Any] | None = None,
                     text: str = "", reasoning: str = "") -> ScriptedReply:
    """A streamed answer with function calls (a ``str`` argument is sent verbatim: malformed JSON)."""
    encoded = [(name, args if isinstance(args, str) else json.dumps(args)) for name, args in calls]
    return ScriptedReply(200, sse_events(text, encoded, use, reasoning))


def tool_call_reply(name: str, args: dict[str, Any] | str, use: dict[str, Any] | None = None,
                    reasoning: str = "") -> ScriptedReply:
    """A streamed answer with one function call."""
    return tool_calls_reply([(name, args)], use, reasoning=reasoning)


def text_reply(text: str, use: dict[str, Any] | None = None) -> ScriptedReply:
    """A streamed plain-text answer."""
    return ScriptedReply(200, sse_events(text, (), use))


def error_reply(status: int, message: str = "scripted error", code: str | None = None,
                retry_after: str | None = None, retry_after_ms: str | None = None) -> ScriptedReply:
    """An OpenAI-style error body with ``status`` (429, 500, 400, ...), optionally with Retry-After headers."""
    headers: list[tuple[str, str]] = []
    if retry_after is not None:
        headers.append(("retry-after", retry_after))
    if retry_after_ms is not None:
        headers.append(("retry-after-ms", retry_after_ms))
    error = {"message": message, "type": "invalid_request_error" if status < 500 else "server_error",
             "param": None, "code": code}
    return ScriptedReply(status, body={"error": error}, headers=tuple(headers))


def stalled_reply(reply: ScriptedReply, delays: tuple[float, ...]) -> ScriptedReply:
    """``reply`` with the server silent ``delays[i]`` seconds before event ``i``."""
    return ScriptedReply(reply.status, reply.events, reply.body, delays, reply.headers)


def connection_error_reply() -> ScriptedReply:
    """No HTTP reply at all: the transport raises ``ConnectError``."""
    return ScriptedReply(0)


class _SlowStream(httpx2.AsyncByteStream):
    """SSE events with pauses; counts the client closing it (the connection)."""

    def __init__(self, events: tuple[dict[str, Any], ...], delays: tuple[float, ...], owner: "ScriptedOpenAI") -> None:
        self._events, self._delays, self._owner = events, delays, owner

    async def __aiter__(self):  # type: ignore[override]
        for i, event in enumerate(self._events):
            delay = self._delays[i] if i < len(self._delays) else 0.0
            if delay:
                await asyncio.sleep(delay)
            yield f"data: {json.dumps(event)}\n\n".encode()
        yield b"data: [DONE]\n\n"

    async def aclose(self) -> None:
        self._owner.closed_streams += 1


@dataclass
class ScriptedOpenAI:
    """Serves queued replies to the SDK and records every request."""

    replies: list[ScriptedReply] = field(default_factory=list)
    requests: list[RecordedRequest] = field(default_factory=list)
    #: streamed responses the client closed (every finished or cut stream closes one)
    closed_streams: int = 0

    def __post_init__(self) -> None:
        self.transport: httpx2.AsyncBaseTransport = httpx2.MockTransport(self._handle)

    def queue(self, replies: Iterable[ScriptedReply]) -> None:
        """Append more replies to the script."""
        self.replies.extend(replies)

    @property
    def remaining(self) -> int:
        """Replies not yet served."""
        return len(self.replies)

    def _handle(self, request: httpx2.Request) -> httpx2.Response:
        raw = request.content.decode("utf-8") if request.content else "{}"
        self.requests.append(RecordedRequest(method=request.method, path=request.url.path,
                                             headers={k.lower(): v for k, v in request.headers.items()},
                                             body=json.loads(raw)))
        if not self.replies:
            raise AssertionError(f"ScriptedOpenAI ran out of replies at request {len(self.requests)}; queue another")
        reply = self.replies.pop(0)
        if reply.status == 0:
            raise httpx2.ConnectError("scripted connection failure", request=request)
        headers = dict(reply.headers)
        if reply.status != 200:
            return httpx2.Response(reply.status, json=reply.body, headers=headers)
        return httpx2.Response(200, stream=_SlowStream(reply.events, reply.delays, self),
                               headers={"content-type": "text/event-stream", **headers})
