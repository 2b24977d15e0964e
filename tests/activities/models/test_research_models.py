"""Research task kinds in the providers: the scripted model's function-call answers, Gemini's function responses."""

from __future__ import annotations

from pathlib import Path

import yaml

from durable_navigator.activities.models.base import CallContext
from durable_navigator.activities.models.gemini import _contents
from durable_navigator.activities.models.scripted import ScriptedModel
from durable_navigator.navcore.model.model import ExecTurn, Message, ModelRequest, ResearchExecuteTask, ToolCallOut


def _execute_request(index: int, transcript: list[ExecTurn], reasks: int = 0) -> ModelRequest:
    task = ResearchExecuteTask(goal="q", repo_root=".", index=index, step_index=0, step="s", turn=len(transcript) + 1,
                               max_turns=4, transcript=transcript, tools=["read_file"])
    messages = [Message(role="system", content="sys"), Message(role="user", content="u")]
    for turn in transcript:
        messages += [Message(role="assistant", tool_calls=turn.calls), Message(role="user", content="results")]
    messages += [Message(role="assistant", content="bad"), Message(role="user", content="again")] * reasks
    return ModelRequest(model="scripted:x", messages=messages, max_output_tokens=64, task=task)


async def test_scripted_executor_turns_answer_with_calls_keyed_by_turn_and_ask(tmp_path: Path) -> None:
    script = tmp_path / "s.yaml"
    script.write_text(yaml.safe_dump({"text": {"research.execute": [
        "",
        {"calls": [{"name": "read_file", "args": {"path": "a.py"}}]},
        ["no call", {"calls": [{"name": "finish_step", "args": {"summary": "s", "findings": []}}]}],
    ]}}))
    model = ScriptedModel(script)
    first = await model.request(_execute_request(1, []), CallContext())
    assert [c.name for c in first.tool_calls] == ["read_file"]
    earlier = [ExecTurn(calls=[ToolCallOut(name="read_file", args={"path": "a.py"})], results=["x"])]
    # turn 2's first ask: the step's earlier turn in the conversation is not a re-ask
    assert (await model.request(_execute_request(2, earlier), CallContext())).text == "no call"
    reask = await model.request(_execute_request(2, earlier, reasks=1), CallContext())
    assert [c.name for c in reask.tool_calls] == ["finish_step"]


def test_gemini_sends_tool_results_as_function_responses() -> None:
    calls = [ToolCallOut(name="read_file", args={"path": "a.py"}), ToolCallOut(name="search_codebase", args={"query": "x"})]
    contents = _contents([Message(role="user", content="step"), Message(role="assistant", tool_calls=calls),
                          Message(role="user", content="## Results", tool_results=["file body", "hits"])])
    parts = contents[-1].parts or []
    responses = [p.function_response for p in parts if p.function_response is not None]
    assert [(r.name, r.response) for r in responses] == [("read_file", {"output": "file body"}),
                                                         ("search_codebase", {"output": "hits"})]
    # a corrective re-ask (no per-call results) still answers each call with the correction
    reask = _contents([Message(role="assistant", tool_calls=calls[:1]), Message(role="user", content="fix it")])
    assert reask[-1].parts[0].function_response.response == {"error": "fix it"}


def test_a_line_range_search_hit_is_read_as_those_lines() -> None:
    from durable_navigator.activities.models.offline.research_exec import _symbol_span

    # the hybrid search answers a run of module code as ``path::a-b``: the executor reads those
    # lines (no engine lookup: the id is not a definition's)
    assert _symbol_span(None, "src/budgetkit/cli.py::1-9") == ("src/budgetkit/cli.py", 1, 9)
    assert _symbol_span(None, "src/budgetkit/ledger.py::Ledger.record") is None
