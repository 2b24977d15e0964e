"""The worker's engine cache and the activities around it see the repository as it is now.

Real engines (``RepoMap.open`` with a private cache dir), the real activities
through ``temporalio.testing.ActivityEnvironment``; no Temporal server needed.
"""

from __future__ import annotations

from tests.support import FIXTURE_REPO as FIXTURE_REPO_DIR

import asyncio
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from temporalio.testing import ActivityEnvironment

from durable_navigator.activities.artifacts import LocalArtifactStore
from durable_navigator.activities.engines import EngineCache
from durable_navigator.activities.pricing_loader import TablePricer
from durable_navigator.activities.navigator import NavigatorActivities
from durable_navigator.activities.skips import files_not_in_map, skipped_files_markdown
from durable_navigator.activities.tools import CodeToolActivities
from durable_navigator.navcore.navigator.activity_io import ScanInput, WriteResultInput
from durable_navigator.navtypes.errors import RepoError
from durable_navigator.navtypes.flightplan import FlightPlan
from durable_navigator.navcore.run.tools import ToolCall, ToolRequest
from durable_navigator.repomap import RepoMap

FIXTURE = FIXTURE_REPO_DIR
PLUGIN = "src/budgetkit/plugin.py"
FULL = FlightPlan(token_budget=6000, goal="budget plugin after_call", default_level=4)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE, root)
    return root


@pytest.fixture
def opener(tmp_path: Path) -> Any:
    """The production opener with a private cache dir, counting its calls."""
    calls: list[Path] = []

    def open_(root: Path) -> RepoMap:
        calls.append(root)
        return RepoMap.open(root, cache_dir=tmp_path / "cache", jobs=1)

    open_.calls = calls  # type: ignore[attr-defined]
    return open_


async def test_get_opens_once_and_refresh_sees_changes(repo: Path, opener: Any) -> None:
    engines = EngineCache(opener)
    first = await engines.get(repo)
    assert await engines.get(repo) is first and await engines.get(repo, refresh=True) is first
    (repo / PLUGIN).unlink()
    assert await engines.get(repo) is first  # no re-discovery without refresh
    fresh = await engines.get(repo, refresh=True)
    assert fresh is not first and PLUGIN not in fresh.files
    assert await engines.get(repo) is fresh and engines.peek(repo) is fresh
    assert len(opener.calls) == 1  # refreshed, never re-opened


async def test_a_noticed_vanish_refreshes_on_the_next_get(repo: Path, opener: Any) -> None:
    engines = EngineCache(opener)
    old = await engines.get(repo)
    (repo / PLUGIN).unlink()
    assert old.read_lines(PLUGIN, 1, 3) == "" and old.vanished()
    new = await engines.get(repo)  # a model call or tool after the noticed vanish
    assert new is not old and PLUGIN not in new.files


async def test_concurrent_refresh_and_render_of_one_root(repo: Path, opener: Any) -> None:
    engines = EngineCache(opener)
    old = await engines.get(repo)
    (repo / PLUGIN).rename(repo / "src/budgetkit/moved.py")
    rendered, a, b = await asyncio.gather(
        asyncio.to_thread(old.render, FULL),  # an exploration rendering the version it holds
        engines.get(repo, refresh=True),  # another exploration's scan
        engines.get(repo, refresh=True),
    )
    assert rendered.metadata.skipped_files in ({}, {PLUGIN: "vanished"})
    assert a is b and "src/budgetkit/moved.py" in a.files and PLUGIN not in a.files


async def test_a_removed_root_is_a_repo_error_and_reopens_when_back(repo: Path, opener: Any, tmp_path: Path) -> None:
    engines = EngineCache(opener)
    await engines.get(repo)
    shutil.move(repo, tmp_path / "away")
    with pytest.raises(RepoError):
        await engines.get(repo, refresh=True)
    shutil.move(tmp_path / "away", repo)
    assert PLUGIN in (await engines.get(repo)).files


async def test_least_recently_used_roots_are_dropped(tmp_path: Path, opener: Any) -> None:
    roots = []
    for name in ("a", "b"):
        roots.append(tmp_path / name)
        shutil.copytree(FIXTURE, roots[-1])
    engines = EngineCache(opener, max_roots=1)
    await engines.get(roots[0])
    await engines.get(roots[1])
    assert engines.peek(roots[0]) is None and engines.peek(roots[1]) is not None


async def test_an_engine_without_refresh_is_reopened(repo: Path) -> None:
    class Plain:
        def __init__(self, root: Path) -> None:
            self.files = sorted(p.name for p in root.rglob("*.py"))

    engines = EngineCache(Plain)
    first = await engines.get(repo)
    (repo / PLUGIN).unlink()
    assert "plugin.py" not in (await engines.get(repo, refresh=True)).files and first.files


# ---------------------------------------------------------------- activities


def _activities(tmp_path: Path, opener: Any) -> NavigatorActivities:
    return NavigatorActivities(LocalArtifactStore(tmp_path / "artifacts"), pricer=TablePricer.load(),
                               engine_factory=opener)


async def test_scan_sees_the_tree_now_on_a_long_lived_instance(repo: Path, opener: Any, tmp_path: Path) -> None:
    acts = _activities(tmp_path, opener)
    env = ActivityEnvironment()
    inp = ScanInput(repo_root=str(repo), model="offline", flight_plan=FULL, goal="budget plugin")
    first = await env.run(acts.scan, inp)
    (repo / PLUGIN).unlink()
    (repo / "src/budgetkit/ledger.py").rename(repo / "src/budgetkit/book.py")
    second = await env.run(acts.scan, inp)
    assert second.files_total == first.files_total - 1 and second.index_version != first.index_version
    text = acts.store.get_bytes(second.render.map_ref).decode()
    assert "plugin.py" not in text.replace("test_plugin.py", "") and "src/budgetkit/book.py" in text


async def test_write_result_lists_skipped_files(repo: Path, opener: Any, tmp_path: Path) -> None:
    (repo / "logo.png").write_bytes(b"\x89PNG\0\0binary")
    (repo / "poetry.lock").write_text("# lock\n")
    acts = _activities(tmp_path, opener)
    env = ActivityEnvironment()
    old = await acts.engine(str(repo))
    (repo / PLUGIN).unlink()
    rendered = old.render(FULL)  # e.g. planning rendering the version it holds
    map_ref = acts.store.put_bytes(rendered.text.encode(), "text/markdown", "")
    out = await env.run(acts.write_result, WriteResultInput(
        out_dir=str(tmp_path / "out"), workflow_id="wf-skips", goal="g", repo_root=str(repo), map_ref=map_ref,
        report_json="{}", summary="s"))
    context = Path(out.context_path).read_text()
    section = context.split("## Files not in the map", 1)[1]
    assert "`logo.png`" in section and "- binary: 1" in section
    assert "`poetry.lock`" in section and "- lockfile: 1" in section
    assert "`src/budgetkit/plugin.py`" in section and "- vanished: 1" in section


async def test_report_json_lists_what_context_md_lists(repo: Path, opener: Any, tmp_path: Path) -> None:
    """#29: report.json had ``skipped_files: {}`` while context.md listed the index's skips."""
    (repo / "logo.png").write_bytes(b"\x89PNG\0\0binary")
    for i in range(20):
        (repo / f"vendor.{i}.min.js").write_text("var a=1;")
    acts = _activities(tmp_path, opener)
    rendered = (await acts.engine(str(repo))).render(FULL)
    meta = rendered.metadata.model_dump(mode="json")
    assert meta["not_indexed_counts"] == {"binary": 1, "minified": 20} and len(meta["not_indexed"]) == 16
    map_ref = acts.store.put_bytes(rendered.text.encode(), "text/markdown", "")
    out = await ActivityEnvironment().run(acts.write_result, WriteResultInput(
        out_dir=str(tmp_path / "out"), workflow_id="wf-agree", goal="g", repo_root=str(repo), map_ref=map_ref,
        report_json=json.dumps({"map_metadata": meta}), summary="s"))
    section = Path(out.context_path).read_text().split("## Files not in the map", 1)[1].split("\n## ", 1)[0]
    report = json.loads(Path(out.report_path).read_text())
    listed = report["files_not_in_map"]
    assert listed["not_indexed"] == report["map_metadata"]["not_indexed"] == meta["not_indexed"]
    assert sorted(re.findall(r"`([^`]+)`", section)) == sorted(listed["not_indexed"])
    assert "- minified: 20" in section and "… and 5 more" in section and "- binary: 1" in section


def test_skipped_section_without_anything_skipped_is_empty() -> None:
    class Clean:
        skipped_files: dict[str, str] = {}
        index_version = "idx:1"

    assert skipped_files_markdown(files_not_in_map(Clean(), '# repo-map {"index":"idx:1"}\n', None)) == ""
    many = type("Many", (), {"skipped_files": {f"vendor/{i}.js": "minified" for i in range(40)},
                             "index_version": "idx:1"})()
    skips = files_not_in_map(many, '# repo-map {"index":"idx:1"}\n', None)
    text = skipped_files_markdown(skips)
    assert "- minified: 40" in text and "… and 25 more" in text
    assert len(skips["not_indexed"]) == 15 and skips["not_indexed_counts"] == {"minified": 40}


async def test_tool_calls_on_a_vanished_file_are_tool_errors(repo: Path, opener: Any, tmp_path: Path) -> None:
    engines = EngineCache(opener)
    old = await engines.get(repo)
    async def held(root: str):  # noqa: ANN202 - the version a run held before the delete
        return old

    tools = CodeToolActivities(engine_for=held)
    (repo / PLUGIN).unlink()
    env = ActivityEnvironment()

    def req(name: str, **args: Any) -> ToolRequest:
        return ToolRequest(repo_root=str(repo), step=1, call=ToolCall(name=name, args=args))

    read = await env.run(tools.read_file, req("read_file", path=PLUGIN))
    assert not read.ok and "deleted or renamed" in (read.error or "")
    callers = await env.run(tools.get_callers, req("get_callers", symbol="src/budgetkit/ledger.py::Ledger"))
    assert callers.ok and PLUGIN not in (callers.content or "")
    callees = await env.run(tools.get_callees, req("get_callees", symbol=f"{PLUGIN}::BudgetPlugin.after_call"))
    assert callees.ok
