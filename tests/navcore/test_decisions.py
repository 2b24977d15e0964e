"""Function calls → decisions: the code tools next to the navigator functions (provider-neutral)."""

from __future__ import annotations

from durable_navigator.activities.models.gemini.schema import function_declarations
from durable_navigator.navcore.run.decision import ModelDecision, decision_from_calls, navigator_function_declarations
from durable_navigator.navcore.model.model import ToolSpec
from durable_navigator.navcore.run.tools import TOOL_NAMES


def test_code_tools_are_declared_next_to_the_navigator_functions() -> None:
    names = [d["name"] for d in navigator_function_declarations()]
    assert names[:2] == ["update_flight_plan", "finalize_context"] and set(TOOL_NAMES) <= set(names)
    gemini = function_declarations([ToolSpec(**d) for d in navigator_function_declarations()])
    assert [d.name for d in gemini] == names
    assert navigator_function_declarations(tools_available=False)[-1]["name"] == "finalize_context"


def test_tool_calls_parse_into_a_call_tools_decision() -> None:
    decision = decision_from_calls([("search_codebase", {"query": "ledger reserve"}),
                                    ("read_file", {"path": "../etc/passwd"})], "gemini-2.5-flash")
    assert isinstance(decision, ModelDecision)
    assert decision.action == "call_tools" and [c.name for c in decision.tool_calls] == ["search_codebase", "read_file"]
    # the escape is not judged here: the tool activity returns it as an error result
    assert decision.tool_calls[1].args == {"path": "../etc/passwd"}
    assert decision.reasoning.startswith("tool calls: search_codebase")
    with_text = decision_from_calls([("read_file", {"path": "a.py"})], "m", "read the entry point first")
    assert isinstance(with_text, ModelDecision) and with_text.reasoning == "read the entry point first"


def test_mixing_tools_and_a_navigator_function_is_refused() -> None:
    problem = decision_from_calls([("read_file", {"path": "a.py"}), ("finalize_context", {"summary": "done"})], "m")
    assert isinstance(problem, str) and "not both" in problem
    assert "at most 8" in str(decision_from_calls([("read_file", {"path": "a.py"})] * 9, "m"))


def test_old_decision_payloads_stay_valid() -> None:
    old = {"action": "update_flight_plan", "reasoning": "r", "updates": {}, "model": "m"}
    assert ModelDecision.model_validate(old).tool_calls == []
