"""Provider-neutral requests ↔ chat-completions messages, in both tool-calling modes.

* ``native``: the request's tool specs become ``tools``; an earlier assistant
  turn with function calls (quoted by a corrective re-ask) is replayed with
  ``tool_calls`` and each call is answered by a ``tool`` message before the
  correction, as the protocol requires.
* ``json`` (the fallback for servers without tool calling, chosen per endpoint):
  the functions are described in the system prompt and the model answers with
  one JSON object, ``{"calls": [{"name": ..., "arguments": {...}}]}``, which
  :func:`calls_from_json_text` turns back into function calls; earlier
  assistant calls are replayed as that JSON text.

Arguments that are not a JSON object are kept verbatim (``raw_arguments``), so
the ``model.request`` activity re-asks with the model's own text quoted.
"""

from __future__ import annotations

import json
from typing import Any

from durable_navigator.activities.models.openai.schema import JSON_CALLS_KEY, json_mode_instructions
from durable_navigator.navcore.model.model import ModelRequest, ToolCallOut

__all__ = ["chat_messages", "parse_arguments", "calls_from_json_text", "calls_as_json_text"]

#: what a replayed, unusable call is answered with (the correction follows as the next user message)
_NOT_APPLIED = "Not applied: this call was unusable; see the next message."


def parse_arguments(name: str, raw: str) -> ToolCallOut:
    """One call from its streamed arguments text (empty text = no arguments)."""
    text = raw.strip()
    if not text:
        return ToolCallOut(name=name, args={})
    try:
        args = json.loads(text)
    except ValueError:
        return ToolCallOut(name=name, raw_arguments=raw[:4000])
    if not isinstance(args, dict):
        return ToolCallOut(name=name, raw_arguments=raw[:4000])
    return ToolCallOut(name=name, args=args)


def _arguments_text(call: ToolCallOut) -> str:
    return call.raw_arguments if call.raw_arguments is not None else json.dumps(call.args, separators=(",", ":"))


def calls_as_json_text(calls: list[ToolCallOut]) -> str:
    """Function calls as the JSON-output fallback's answer object."""
    items = []
    for call in calls:
        try:
            arguments: Any = json.loads(_arguments_text(call))
        except ValueError:
            arguments = _arguments_text(call)
        items.append({"name": call.name, "arguments": arguments})
    return json.dumps({JSON_CALLS_KEY: items}, separators=(",", ":"))


def _json_object(text: str) -> Any:
    """The JSON object in ``text`` (a bare object, or one inside a code fence or prose), else ``None``."""
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.strip("`")
        stripped = stripped[stripped.find("\n") + 1:] if "\n" in stripped else stripped
    start, end = stripped.find("{"), stripped.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        return json.loads(stripped[start:end + 1])
    except ValueError:
        return None


def calls_from_json_text(text: str) -> tuple[list[ToolCallOut], str]:
    """The JSON-output fallback's answer as function calls, and the text that remains.

    No JSON object → no calls and the whole text (the activity re-asks when a call was required).
    """
    data = _json_object(text)
    if not isinstance(data, dict):
        return [], text
    items = data.get(JSON_CALLS_KEY)
    if items is None and "name" in data:
        items = [data]  # one bare {"name", "arguments"} object: the format's only plausible slip
    if not isinstance(items, list):
        return [], text
    calls: list[ToolCallOut] = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            calls.append(ToolCallOut(name="?", raw_arguments=json.dumps(item)[:4000]))
            continue
        arguments = item.get("arguments", {})
        if isinstance(arguments, str):
            calls.append(parse_arguments(item["name"], arguments))
        elif isinstance(arguments, dict):
            calls.append(ToolCallOut(name=item["name"], args=arguments))
        else:
            calls.append(ToolCallOut(name=item["name"], raw_arguments=json.dumps(arguments)[:4000]))
    return calls, ""


def chat_messages(req: ModelRequest, json_mode: bool) -> list[dict[str, Any]]:
    """The request's messages in the chat-completions shape of the endpoint's tool-calling mode."""
    out: list[dict[str, Any]] = []
    system = req.system
    if json_mode and req.tools and req.tool_choice != "none":
        system = f"{system}\n\n{json_mode_instructions(req.tools, req.tool_choice == 'required')}".strip()
    if system:
        out.append({"role": "system", "content": system})
    pending: list[str] = []
    for turn, m in enumerate(req.conversation):
        if m.role == "assistant":
            pending = []
            if not m.tool_calls:
                out.append({"role": "assistant", "content": m.content or "(no answer)"})
            elif json_mode:
                prose = f"{m.content}\n" if m.content else ""
                out.append({"role": "assistant", "content": prose + calls_as_json_text(m.tool_calls)})
            else:
                pending = [f"call_{turn}_{i}" for i in range(len(m.tool_calls))]
                out.append({"role": "assistant", "content": m.content or None, "tool_calls": [
                    {"id": call_id, "type": "function",
                     "function": {"name": call.name, "arguments": _arguments_text(call)}}
                    for call_id, call in zip(pending, m.tool_calls)
                ]})
            continue
        out.extend({"role": "tool", "tool_call_id": call_id, "content": _NOT_APPLIED} for call_id in pending)
        pending = []
        out.append({"role": "user", "content": m.content})
    return out
