"""Pure research logic: citations, the planner / refinery / executor parsers, budget slices."""

from __future__ import annotations

from decimal import Decimal

import pytest

from durable_navigator.navcore.run.budget import BudgetLedger
from durable_navigator.navcore.run.citations import Citation, check_citation, parse_citations, rewrite_citations
from durable_navigator.navcore.planning.planning import PlanParseError
from durable_navigator.navcore.research.parse import execute_from_calls, parse_refine, parse_research_plan
from durable_navigator.navcore.run.subagents import AgentProfile, child_slice_micros, completed_normally


def test_citations_are_paths_with_lines_not_urls_or_addresses() -> None:
    text = ("see navcore/run/budget.py:97-120, `workflows/blocks/model_call.py:140`, README.md:9-3, "
            "http://127.0.0.1:8233/x, 127.0.0.1:7233 and ./cli/app.py:5")
    assert [c.label() for c in parse_citations(text)] == [
        "navcore/run/budget.py:97-120", "workflows/blocks/model_call.py:140-140", "README.md:3-9", "cli/app.py:5-5"]


def test_the_check_keeps_clamps_or_removes() -> None:
    assert check_citation(Citation(path="a.py", start=1, end=5), 10).verdict == "ok"
    clamped = check_citation(Citation(path="a.py", start=8, end=50), 10)
    assert clamped.verdict == "clamped" and clamped.written == Citation(path="a.py", start=8, end=10)
    assert check_citation(Citation(path="a.py", start=11, end=12), 10).verdict == "removed"
    assert check_citation(Citation(path="b.py", start=1, end=1), None).verdict == "removed"


def test_rewrite_leaves_no_citation_of_a_missing_line() -> None:
    counts = {"a.py": 10}
    text, checks = rewrite_citations("x (a.py:2-4), y (a.py:9-40), z (gone.py:1-2), w (a.py:20)", counts.get)
    assert text == "x (a.py:2-4), y (a.py:9-10), z ((unverified reference removed)), w ((unverified reference removed))"
    assert [c.verdict for c in checks] == ["ok", "clamped", "removed", "removed"]
    assert all(counts.get(c.path) and c.end <= counts[c.path] for c in parse_citations(text))


def test_plan_parses_strings_objects_fences_and_drops_unknown_profiles() -> None:
    text = 'Here:\n```json\n["find X", {"step": "ask the reviewer", "profile": "reviewer"}, ' \
           '{"step": "Find X"}, {"step": "y", "profile": "ghost"}]\n```'
    steps = parse_research_plan(text, max_steps=5, profiles=["reviewer"])
    assert [(s.description, s.profile) for s in steps] == [("find X", None), ("ask the reviewer", "reviewer"),
                                                           ("y", None)]
    assert len(parse_research_plan('["a", "b", "c"]', max_steps=2)) == 2
    for bad in ("no list here", "[]", "[1, 2]", '["a",'):
        with pytest.raises(PlanParseError):
            parse_research_plan(bad, max_steps=3)


def test_refine_verdicts() -> None:
    assert parse_refine("DECISION: FINISH\nREASON: done").decision == "finish"
    cont = parse_refine("DECISION: CONTINUE\nMISSING: the callers\nREASON: half")
    assert (cont.decision, cont.missing) == ("continue", "the callers")
    assert parse_refine("**FINISH** — all found").decision == "finish"
    with pytest.raises(PlanParseError, match="MISSING"):
        parse_refine("DECISION: CONTINUE")
    with pytest.raises(PlanParseError):
        parse_refine("maybe")


def test_executor_calls() -> None:
    kw = dict(step=2, tools=["read_file", "search_codebase"], profiles=["reviewer"], can_navigate=False,
              max_tool_calls=2)
    tools = execute_from_calls([("read_file", {"path": "a.py"})], "", **kw)
    assert not isinstance(tools, str) and tools.action == "call_tools" and tools.tool_calls[0].name == "read_file"
    done = execute_from_calls([("finish_step", {"summary": "s", "findings": [
        {"claim": "X does Y at a.py:3-4", "citations": ["a.py:1-2"]}, {"claim": "", "citations": ["a.py:1"]}]})], "", **kw)
    assert not isinstance(done, str) and done.action == "finish_step"
    assert [c.label() for c in done.findings[0].citations] == ["a.py:1-2", "a.py:3-4"] and done.findings[0].step == 2
    assert len(done.findings) == 1  # the empty claim is dropped
    delegate = execute_from_calls([("delegate", {"profile": "reviewer", "task": "check it"})], "", **kw)
    assert not isinstance(delegate, str) and (delegate.profile, delegate.task) == ("reviewer", "check it")
    assert "unknown profile" in str(execute_from_calls([("delegate", {"profile": "x", "task": "t"})], "", **kw))
    assert "not available" in str(execute_from_calls([("navigate", {"goal": "g"})], "", **kw))
    assert "not available to this profile" in str(execute_from_calls([("get_callers", {"symbol": "s"})], "", **kw))
    assert "at most 2" in str(execute_from_calls([("read_file", {"path": "a"})] * 3, "", **kw))
    assert "alone" in str(execute_from_calls([("read_file", {"path": "a"}), ("finish_step", {})], "", **kw))
    assert "no function call" in str(execute_from_calls([], "text", **kw))


def test_slices_take_a_share_of_what_is_left_and_nothing_below_the_floor() -> None:
    ledger = BudgetLedger(max_micros=100_000)
    ledger.reserve("m", 20_000, 1)
    assert child_slice_micros(ledger, Decimal("0.5"), 1000) == 40_000
    assert child_slice_micros(BudgetLedger(max_micros=1500), Decimal("0.5"), 1000) == 0
    assert completed_normally("finalized") and not completed_normally("max_iterations")


def test_profiles_validate_their_kind_and_planning() -> None:
    with pytest.raises(ValueError, match="research profile plans"):
        AgentProfile(name="r", kind="research", planning="off")
    with pytest.raises(ValueError):
        AgentProfile(name="Bad Name")
    assert AgentProfile(name="nav", kind="navigate", planning="off").planning == "off"
