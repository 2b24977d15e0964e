"""Code tools on names that are not UTF-8 and on symlink loops (#29).

The model names files by the paths the map shows; a Latin-1 name is shown as
``caf\\xe9_latin1.py`` and every tool takes and returns that form. A symlink loop
is a tool error, never an activity failure (``RuntimeError`` before).
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from temporalio.testing import ActivityEnvironment

from durable_navigator.activities.tools import CodeToolActivities
from durable_navigator.navcore.run.tools import ToolCall, ToolRequest, ToolResult
from durable_navigator.repomap import RepoMap

SHOWN = "caf\\xe9_latin1.py"
DIR = "d\\xff"


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> RepoMap:
    root = tmp_path_factory.mktemp("names") / "repo"
    root.mkdir()
    (root / "main.py").write_text("from x import cafe_latin\n\ndef main():\n    return cafe_latin(1)\n")
    raw = os.fsencode(root)
    with open(raw + b"/caf\xe9_latin1.py", "wb") as fh:
        fh.write(b"def cafe_latin(value):\n    return value * 2\n")
    os.mkdir(raw + b"/d\xff")
    with open(raw + b"/d\xff/inner.py", "wb") as fh:
        fh.write(b"INNER = 1\n")
    os.symlink("loop1", root / "loop2")
    os.symlink("loop2", root / "loop1")
    return RepoMap.open(root, cache_dir=tmp_path_factory.mktemp("cache"), jobs=1)


async def _run(engine: RepoMap, name: str, **args: Any) -> ToolResult:
    async def engines(root: str) -> RepoMap:
        return engine

    tools = CodeToolActivities(engine_for=engines)
    req = ToolRequest(repo_root="repo", call=ToolCall(name=name, args=args), step=1)
    res = await ActivityEnvironment().run(getattr(tools, name), req)
    res.model_dump_json()  # the activity result is a Temporal payload: no lone surrogates
    return res


async def test_read_file_takes_the_escaped_name(engine: RepoMap) -> None:
    res = await _run(engine, "read_file", path=SHOWN)
    assert res.ok and "return value * 2" in res.content and SHOWN in res.content
    inner = await _run(engine, "read_file", path=f"{DIR}/inner.py")
    assert inner.ok and "INNER = 1" in inner.content


async def test_list_and_search_answer_with_the_escaped_name(engine: RepoMap) -> None:
    top = await _run(engine, "list_directory", path=".")
    assert top.ok and SHOWN in top.content.splitlines() and f"{DIR}/  (1 files)" in top.content
    sub = await _run(engine, "list_directory", path=DIR)
    assert sub.ok and sub.content.splitlines() == ["inner.py"]
    hits = await _run(engine, "search_codebase", query="cafe_latin value")
    assert hits.ok and SHOWN in hits.content


@pytest.mark.parametrize("path", ["loop1", "loop2/x.py", "caf\\x00.py"])
async def test_a_loop_or_a_nul_is_a_tool_error(engine: RepoMap, path: str) -> None:
    res = await _run(engine, "read_file", path=path)
    assert not res.ok and res.error
