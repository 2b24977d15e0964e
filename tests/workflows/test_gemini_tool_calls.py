"""The Gemini provider declares the code tools and turns their calls into ``call_tools`` decisions."""

from __future__ import annotations

from google.genai import types

from durable_navigator.activities.models.gemini import _decision
from durable_navigator.activities.models.gemini_tools import forced_tool_config, navigator_tool, parse_function_call
from durable_navigator.navcore.decision import ModelDecision, TokenUsage
from durable_navigator.navcore.tools import TOOL_NAMES


def test_code_tools_are_declared_next_to_the_navigator_functions() -> None:
    names = [d.name for d in navigator_tool().function_declarations or []]
    assert names[:2] == ["update_flight_plan", "finalize_context"] and set(TOOL_NAMES) <= set(names)
    allowed = forced_tool_config().function_calling_config.allowed_function_names or []
    assert set(TOOL_NAMES) <= set(allowed)


def test_tool_calls_parse_into_a_call_tools_decision() -> None:
    parsed = parse_function_call([
        types.FunctionCall(name="search_codebase", args={"query": "ledger reserve"}),
        types.FunctionCall(name="read_file", args={"path": "../etc/passwd"}),
    ])
    decision = _decision("gemini-2.5-flash", parsed, TokenUsage(input_tokens=10), 1)
    assert decision.action == "call_tools" and [c.name for c in decision.tool_calls] == ["search_codebase", "read_file"]
    # the escape is not judged here: the tool activity returns it as an error result
    assert decision.tool_calls[1].args == {"path": "../etc/passwd"}


def test_mixing_tools_and_a_navigator_function_is_refused() -> None:
    parsed = parse_function_call([
        types.FunctionCall(name="read_file", args={"path": "a.py"}),
        types.FunctionCall(name="finalize_context", args={"summary": "done"}),
    ])
    assert parsed.action is None and "not both" in (parsed.error or "")


def test_old_decision_payloads_stay_valid() -> None:
    old = {"action": "update_flight_plan", "reasoning": "r", "updates": {}, "model": "m"}
    assert ModelDecision.model_validate(old).tool_calls == []
