"""Code tools: confinement to the repository root, output caps, errors as results.

Runs the real repo-map engine on a small fixture repository with symlinks
that escape it, through ``temporalio.testing.ActivityEnvironment``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from temporalio.testing import ActivityEnvironment

from durable_navigator.activities.artifacts import LocalArtifactStore
from durable_navigator.activities.tools import CodeToolActivities
from durable_navigator.navcore.run.tools import TOOL_ACTIVITY, TOOL_DECLARATIONS, TOOL_NAMES, ToolCall, ToolLimits, ToolRequest, ToolResult

from durable_navigator.repomap import RepoMap

SECRET = "outside-secret-4242"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("tools")
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text(f"TOKEN = '{SECRET}'\ndef leaked():\n    return TOKEN\n")
    root = base / "repo"
    (root / "src" / "app").mkdir(parents=True)
    (root / "src" / "app" / "core.py").write_text(
        "def helper(x):\n    return x + 1\n\n\ndef main():\n    return helper(2)\n"
    )
    (root / "src" / "app" / "big.py").write_text(
        "".join(f"def f{i}():\n    return {i}  # line of a long generated module\n" for i in range(600))
    )
    for i in range(12):
        (root / "src" / f"mod{i:02d}.py").write_text(f"def g{i}():\n    return {i}\n")
    (root / "README.md").write_text("# demo\nhelper and main live in src/app/core.py\n")
    os.symlink(outside, root / "link_out")
    os.symlink(outside / "secret.py", root / "src" / "secret_link.py")
    return root


@pytest.fixture(scope="module")
def engine(repo: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    return RepoMap.open(repo, cache_dir=tmp_path_factory.mktemp("cache"), jobs=1)


def _tools(engine: Any, **kw: Any) -> CodeToolActivities:
    async def engines(root: str) -> RepoMap:
        return engine

    return CodeToolActivities(engine_for=engines, **kw)


async def _run(tools: CodeToolActivities, name: str, **args: Any) -> ToolResult:
    method = getattr(tools, name)
    # engine_for ignores repo_root here: each test's tools object is bound to one engine.
    req = ToolRequest(repo_root="repo", call=ToolCall(name=name, args=args), step=1)
    return await ActivityEnvironment().run(method, req)


ESCAPES = ["../outside/secret.py", "/etc/passwd", "src/../../outside/secret.py", "link_out/secret.py", "src/secret_link.py"]


@pytest.mark.parametrize("path", ESCAPES)
async def test_read_file_refuses_escapes(engine: Any, path: str) -> None:
    res = await _run(_tools(engine), "read_file", path=path)
    assert not res.ok and res.error and SECRET not in (res.content + res.error)


@pytest.mark.parametrize("path", ["..", "../outside", "/", "/tmp", "link_out"])
async def test_list_directory_refuses_escapes(engine: Any, path: str) -> None:
    res = await _run(_tools(engine), "list_directory", path=path)
    assert not res.ok and res.error and "secret.py" not in res.content


@pytest.mark.parametrize("tool", ["get_callers", "get_callees"])
@pytest.mark.parametrize("symbol", ["../outside/secret.py::leaked", "/etc/passwd::root", "link_out/secret.py::leaked"])
async def test_reference_tools_refuse_escapes(engine: Any, tool: str, symbol: str) -> None:
    res = await _run(_tools(engine), tool, symbol=symbol)
    assert not res.ok and res.error


async def test_search_never_reaches_outside(engine: Any) -> None:
    res = await _run(_tools(engine), "search_codebase", query="leaked TOKEN")
    assert res.ok and SECRET not in res.content and "outside" not in res.content
    assert "secret_link" not in res.content and "link_out" not in res.content


async def test_tools_work_inside(engine: Any) -> None:
    tools = _tools(engine)
    search = await _run(tools, "search_codebase", query="helper")
    assert search.ok and "src/app/core.py" in search.content
    read = await _run(tools, "read_file", path="src/app/core.py", start_line=5, end_line=6)
    assert read.ok and "def main" in read.content and "     5  def main():" in read.content
    ls = await _run(tools, "list_directory", path="src")
    assert ls.ok and "app/  (2 files)" in ls.content and "mod00.py" in ls.content
    callers = await _run(tools, "get_callers", symbol="helper")
    assert callers.ok and "src/app/core.py" in callers.content and "main" in callers.content
    callees = await _run(tools, "get_callees", symbol="src/app/core.py::main")
    assert callees.ok and "helper" in callees.content


async def test_errors_are_results(engine: Any) -> None:
    tools = _tools(engine)
    bad = await _run(tools, "read_file", path="src/app/core.py", start_line=0)
    assert not bad.ok and "bad arguments" in (bad.error or "")
    missing = await _run(tools, "read_file", path="src/nope.py")
    assert not missing.ok and "not an indexed file" in (missing.error or "")
    past = await _run(tools, "read_file", path="src/app/core.py", start_line=500)
    assert not past.ok and "past the end" in (past.error or "")
    unknown = await _run(tools, "get_callers", symbol="no_such_symbol_xyz")
    assert not unknown.ok and "search_codebase" in (unknown.error or "")
    wrong = await ActivityEnvironment().run(
        tools.read_file, ToolRequest(repo_root="repo", call=ToolCall(name="list_directory"))
    )
    assert not wrong.ok


async def test_output_caps_and_artifacts(engine: Any, tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path / "artifacts")
    limits = ToolLimits(max_inline_chars=500, max_read_lines=100, max_dir_entries=3, max_search_results=2)
    tools = _tools(engine, store=store, limits=limits)
    read = await _run(tools, "read_file", path="src/app/big.py")
    assert read.ok and read.truncated and len(read.content) <= 500
    assert read.artifact_ref is not None
    full = store.get_text(read.artifact_ref)
    assert "lines 1-100 of 1200; ask for 101-1200 next]" in full  # line cap, with a next-range hint
    assert full.count("\n") <= 102
    ls = await _run(tools, "list_directory", path="src")
    assert ls.truncated and "more entries not shown" in ls.content
    search = await _run(tools, "search_codebase", query="return", limit=50)
    assert search.ok and len(search.content.splitlines()) <= 2
    hard = ToolLimits(max_inline_chars=200, max_output_chars=1000)
    capped = await _run(_tools(engine, store=store, limits=hard), "read_file", path="src/app/big.py")
    assert capped.artifact_ref is not None and capped.artifact_ref.size <= 1000 * 4
    assert len(store.get_text(capped.artifact_ref)) <= 1000 and len(capped.content) <= 200
    no_store = await _run(_tools(engine, limits=limits), "read_file", path="src/app/big.py")
    assert no_store.truncated and no_store.artifact_ref is None and "narrow the request" in no_store.content


async def test_declarations_reach_gemini_request() -> None:
    """The declarations serialize through the real google-genai client (scripted HTTP layer)."""
    from google.genai import types

    from durable_navigator.activities.models.gemini import GeminiConfig, GeminiCredentials, build_client
    from durable_navigator.activities.models.gemini.schema import function_declarations
    from durable_navigator.activities.models.gemini.testing import ScriptedGemini, function_call_reply
    from durable_navigator.navcore.model.model import ToolSpec

    gemini = ScriptedGemini([function_call_reply("read_file", {"path": "src/app/core.py", "start_line": 1})])
    client = build_client(GeminiCredentials(api_key="k"), GeminiConfig(), transport=gemini.transport)
    declared = function_declarations([ToolSpec(**d) for d in TOOL_DECLARATIONS])
    config = types.GenerateContentConfig(tools=[types.Tool(function_declarations=declared)])
    resp = await client.aio.models.generate_content(model="gemini-2.5-flash", contents="go", config=config)
    sent = gemini.requests[0].body["tools"][0]["functionDeclarations"]
    assert [d["name"] for d in sent] == list(TOOL_NAMES)
    assert sent[1]["parameters"]["required"] == ["path"]
    assert sent[1]["parameters"]["properties"]["start_line"]["type"] == "INTEGER"
    call = resp.function_calls[0]
    assert ToolCall(name=call.name, args=dict(call.args)).name == "read_file"


def test_call_summaries_are_readable() -> None:
    call = ToolCall(name="read_file", args={"path": "src/app/core.py", "start_line": 5, "end_line": 9})
    assert call.summary(4) == "iter 4 · read_file src/app/core.py:5-9"
    assert ToolCall(name="get_callers", args={"symbol": "helper"}).summary() == "get_callers helper"


def test_declarations_match_tools() -> None:
    assert tuple(d["name"] for d in TOOL_DECLARATIONS) == TOOL_NAMES
    assert set(TOOL_ACTIVITY.values()) == {f"tools.{n}" for n in TOOL_NAMES}
    names = {m.__temporal_activity_definition.name for m in CodeToolActivities(lambda r: None).all()}  # type: ignore[attr-defined]
    assert names == set(TOOL_ACTIVITY.values())


async def test_search_answers_definitions_with_line_ranges(engine: Any) -> None:
    res = await _run(_tools(engine), "search_codebase", query="helper")
    first = res.content.splitlines()[0]
    assert first.startswith("src/app/core.py:1-2  score=") and first.endswith("  src/app/core.py::helper")
    nothing = await _run(_tools(engine), "search_codebase", query="why does the")
    assert nothing.ok and nothing.content.startswith("no matches for 'why does the'")


async def test_callers_are_code_sites_with_how_they_were_resolved(engine: Any) -> None:
    res = await _run(_tools(engine), "get_callers", symbol="src/app/core.py::helper")
    assert res.content.splitlines() == ["src/app/core.py::helper: 1 callers",
                                        "  src/app/core.py:6  src/app/core.py::main  (call, jedi)"]
    assert "README" not in res.content  # README.md names helper: prose, not a caller


async def test_sites_that_may_mean_another_definition_are_listed_apart(tmp_path: Path) -> None:
    from durable_navigator.activities.models.offline.tools import parse_tool_results
    from durable_navigator.workflows.blocks.tools import tool_result_lines

    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.js").write_text("class A { run() { return 1 } }\nmodule.exports = A;\n")
    (root / "b.js").write_text("class B { run() { return 2 } }\nfunction go(b) { return new B().run() }\n")
    (root / "main.js").write_text("function go(x) { return x.run() }\n")
    engine = RepoMap.open(root, cache_dir=tmp_path / "cache", jobs=1)
    res = await _run(_tools(engine), "get_callers", symbol="b.js::B.run")
    assert res.content.splitlines() == [
        "b.js::B.run: 1 callers", "  b.js:2  b.js::go  (call, qualifier)",
        "  + 1 sites name 'run' but may mean another definition (the receiver's type is unknown):",
        "    main.js:1  main.js::go"]
    hints = parse_tool_results(tool_result_lines([res]))
    assert hints.callers == {"b.js::B.run": ["b.js"]}  # the unsure site is no caller


async def test_the_research_executor_reads_the_tools_current_text(tmp_path: Path) -> None:
    """The offline research executor parses the same tool text: search hits with their line
    ranges (the path without them), resolved callers with how they were tied, unsure sites
    left out."""
    from durable_navigator.activities.models.offline.research_exec import parse_transcript
    from durable_navigator.navcore.model.model import ExecTurn, ResearchExecuteTask
    from durable_navigator.workflows.blocks.tools import tool_result_lines

    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.js").write_text("class A { run() { return 1 } }\nmodule.exports = A;\n")
    (root / "b.js").write_text("class B { run() { return 2 } }\nfunction go(b) { return new B().run() }\n")
    (root / "main.js").write_text("function go(x) { return x.run() }\n")
    engine = RepoMap.open(root, cache_dir=tmp_path / "cache", jobs=1)
    tools = _tools(engine)
    results = [await _run(tools, "search_codebase", query="B run"), await _run(tools, "get_callers", symbol="b.js::B.run")]
    assert any(ln.startswith("b.js:1-1  score=") for ln in results[0].content.splitlines())
    task = ResearchExecuteTask(goal="q", repo_root=str(root), step_index=0, step="s", turn=2, max_turns=4,
                               transcript=[ExecTurn(results=tool_result_lines(results))])
    ev = parse_transcript(task)
    assert ("b.js", 1, "b.js::B.run") in ev.hits and all(":" not in path for path, _, _ in ev.hits)
    assert ev.callers == {"b.js::B.run": [("b.js", 2, "b.js::go")]}


async def test_a_slow_first_query_heartbeats(engine: Any) -> None:
    """jedi's first inference on a cold engine takes seconds: the activity heartbeats meanwhile."""
    import time

    class Slow:
        """The real engine, slowed down like a cold first query."""

        def __getattr__(self, name: str) -> Any:
            return getattr(engine, name)

        def callers(self, sid: str) -> Any:
            time.sleep(2.5)
            return engine.callers(sid)

    beats: list[Any] = []
    env = ActivityEnvironment()
    env.on_heartbeat = lambda *details: beats.append(details)
    req = ToolRequest(repo_root="repo", call=ToolCall(name="get_callers", args={"symbol": "helper"}), step=3)
    res = await env.run(_tools(Slow()).get_callers, req)
    assert res.ok and "src/app/core.py::main" in res.content
    assert len(beats) >= 3 and beats[-1] == ("get_callers step 3 (running)",)
