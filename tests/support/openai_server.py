"""A small OpenAI-compatible chat-completions server (stdlib only), run as its own process in tests.

    python -m tests.support.openai_server --port 8123 --script script.json --log requests.jsonl

It speaks the protocol the way Ollama, vLLM and llama.cpp's server do —
``POST /v1/chat/completions``, streamed as server-sent events ending in
``data: [DONE]`` with a final usage chunk when ``stream_options.include_usage``
is set, or one JSON body — over a real socket. The answers are scripted:
``script.json`` holds ``{"replies": [...]}``, each reply used once, the first
unused one whose ``when`` matches the request (``"tools"``: the request
declares functions; any other string: a substring of its system message;
absent: any request)::

    {"when": "tools", "tool_calls": [{"name": "finalize_context", "arguments": {"summary": "..."}}],
     "usage": {"prompt_tokens": 900, "completion_tokens": 30}}
    {"when": "Decide whether a plan is needed", "text": "DIRECT", "usage": {...}}
    {"error": {"status": 429, "message": "slow down", "headers": {"retry-after": "1"}}}

Every request is appended to the ``--log`` file as one JSON line (its
Authorization header, body, and the usage the server reported), so a test can
compare what the run booked with what the server said. When it is ready the
process prints ``ready <port>`` on stdout. No network beyond the loopback port.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = ["ScriptedServer", "LocalServer", "main"]


class ScriptedServer:
    """The replies of one server process, handed out once each."""

    def __init__(self, replies: list[dict[str, Any]], log: Path) -> None:
        self.replies = replies
        self.used = [False] * len(replies)
        self.log = log
        self.lock = threading.Lock()

    def pick(self, body: dict[str, Any]) -> dict[str, Any] | None:
        system = " ".join(str(m.get("content") or "") for m in body.get("messages", []) if m.get("role") == "system")
        with self.lock:
            for i, reply in enumerate(self.replies):
                when = reply.get("when")
                fits = when is None or (when == "tools" and bool(body.get("tools"))) or (
                    when != "tools" and isinstance(when, str) and when in system)
                if not self.used[i] and fits:
                    self.used[i] = True
                    return reply
        return None

    def record(self, entry: dict[str, Any]) -> None:
        with self.lock, self.log.open("a", encoding="utf-8") as out:
            out.write(json.dumps(entry) + "\n")


def _chunk(model: str, delta: dict[str, Any] | None, finish: str | None = None,
           usage: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"id": "chatcmpl-local", "object": "chat.completion.chunk", "created": int(time.time()),
                            "model": model,
                            "choices": [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]}
    if usage is not None:
        body["usage"] = usage
    return body


def _arguments(call: dict[str, Any]) -> str:
    args = call.get("arguments", {})
    return args if isinstance(args, str) else json.dumps(args)


def _events(model: str, reply: dict[str, Any], include_usage: bool) -> list[dict[str, Any]]:
    events = [_chunk(model, {"role": "assistant", "content": ""})]
    text = str(reply.get("text", ""))
    for start in range(0, len(text), 40):
        events.append(_chunk(model, {"content": text[start:start + 40]}))
    calls = reply.get("tool_calls", [])
    for index, call in enumerate(calls):
        events.append(_chunk(model, {"tool_calls": [{"index": index, "id": f"call_{index}", "type": "function",
                                                     "function": {"name": call["name"], "arguments": ""}}]}))
        arguments = _arguments(call)
        for start in range(0, len(arguments), 24):
            events.append(_chunk(model, {"tool_calls": [{"index": index,
                                                         "function": {"arguments": arguments[start:start + 24]}}]}))
    events.append(_chunk(model, {}, "tool_calls" if calls else "stop"))
    if include_usage and reply.get("usage") is not None:
        events.append(_chunk(model, None, usage=_usage(reply)))
    return events


def _usage(reply: dict[str, Any]) -> dict[str, Any]:
    usage = dict(reply.get("usage") or {})
    usage.setdefault("total_tokens", int(usage.get("prompt_tokens", 0)) + int(usage.get("completion_tokens", 0)))
    return usage


def _completion(model: str, reply: dict[str, Any]) -> dict[str, Any]:
    calls = [{"id": f"call_{i}", "type": "function", "function": {"name": c["name"], "arguments": _arguments(c)}}
             for i, c in enumerate(reply.get("tool_calls", []))]
    message: dict[str, Any] = {"role": "assistant", "content": reply.get("text") or None}
    if calls:
        message["tool_calls"] = calls
    return {"id": "chatcmpl-local", "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": _usage(reply)}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "scripted-openai/1"
    script: ScriptedServer  # set on the class by main()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        pass  # the JSON log is the record

    def _json(self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found", "code": None}})
            return
        reply = self.script.pick(body)
        entry = {"authorization": self.headers.get("Authorization"), "body": body,
                 "reply": None if reply is None else {k: v for k, v in reply.items() if k != "when"}}
        self.script.record(entry)
        if reply is None:
            self._json(500, {"error": {"message": "the scripted server has no reply left for this request",
                                       "type": "server_error", "code": None}})
            return
        if "error" in reply:
            error = reply["error"]
            self._json(int(error["status"]), {"error": {"message": error.get("message", "scripted error"),
                                                        "type": "scripted", "code": error.get("code")}},
                       error.get("headers"))
            return
        model = str(body.get("model", "?"))
        if not body.get("stream"):
            self._json(200, _completion(model, reply))
            return
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")  # the body ends when the connection does
        self.end_headers()
        for event in _events(model, reply, include_usage):
            self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True


class LocalServer:
    """This server as a separate process on a free loopback port (started and stopped by its PID)."""

    def __init__(self, root: Path, replies: list[dict[str, Any]]) -> None:
        from durable_navigator.workers.devserver import free_port

        self.port = free_port()
        self.script, self.log = root / "llm-script.json", root / "llm-requests.jsonl"
        self.script.write_text(json.dumps({"replies": replies}), encoding="utf-8")
        self.process: Any = None

    @property
    def base_url(self) -> str:
        """What an endpoint's ``base_url`` is set to."""
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> "LocalServer":
        import subprocess

        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.openai_server", "--port", str(self.port), "--script",
             str(self.script), "--log", str(self.log)],
            cwd=Path(__file__).resolve().parents[2], stdout=subprocess.PIPE, text=True)
        line = self.process.stdout.readline() if self.process.stdout else ""
        if line.strip() != f"ready {self.port}":
            self.__exit__()
            raise RuntimeError(f"the local OpenAI-compatible server did not start: {line!r}")
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()  # ours, by its PID
            self.process.wait(timeout=10)

    def requests(self) -> list[dict[str, Any]]:
        """Every request served so far (Authorization header, body, the reply with its usage)."""
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text(encoding="utf-8").splitlines() if line.strip()]


def main(argv: list[str] | None = None) -> int:
    """Serve until terminated (SIGTERM); print ``ready <port>`` once listening."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--script", type=Path, required=True)
    parser.add_argument("--log", type=Path, required=True)
    args = parser.parse_args(argv)
    replies = json.loads(args.script.read_text(encoding="utf-8"))["replies"]
    _Handler.script = ScriptedServer(replies, args.log)
    httpd = ThreadingHTTPServer(("127.0.0.1", args.port), _Handler)
    httpd.daemon_threads = True
    print(f"ready {args.port}", flush=True)
    try:
        httpd.serve_forever()
    finally:
        httpd.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
