"""The fuzzing bar of issue #29 in small: ``bench/fuzz_surfaces.py --smoke`` (fixed seed, ~100 CLI + 20 MCP calls).

One run of the fuzzer (its own ``navigator server`` and ``navigator worker``, the installed
console scripts, the MCP SDK client) per module; the tests read its JSON result. Failures that
belong to an item of issue #29 (fixed) are checked by their own test, naming that item; every
other failure fails :func:`test_no_failure_outside_the_known_items`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from tests.support import TESTS

BENCH = TESTS.parent / "bench"
sys.path.insert(0, str(BENCH))

from fuzz_report import (  # noqa: E402
    BUDGET_ITEM,
    DASH_ITEM,
    EMPTY_ITEM,
    FS_ITEM,
    JOBS_ITEM,
    UI_ITEM,
)


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The smoke run's JSON result."""
    out = tmp_path_factory.mktemp("fuzz")
    proc = subprocess.run([sys.executable, str(BENCH / "fuzz_surfaces.py"), "--smoke", "--seed", "29", "--out",
                           str(out)], capture_output=True, text=True, timeout=900)
    found = sorted(out.glob("fuzz-surfaces-*-smoke.json"))
    assert found, (proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:])
    return json.loads(found[-1].read_text())


def _failures(data: dict[str, Any], known: str | None) -> list[str]:
    """Failure groups and failed / stuck runs labelled ``known`` (None: not labelled with any item)."""
    runs = data["runs"]
    found = [f"{g['signature']}: {g['repro_shell']}" for g in data["groups"] if g["known"] == known]
    found += [f"run {r['workflow_id']}: {r['detail']} ({r.get('call')})"
              for r in runs["failed_runs"] + runs["stuck_after_stop"] + runs["workflow_task_failing"]
              if r.get("known") == known]
    if known is None:
        found += [f"mcp: {p}" for p in data["mcp"]["problems"]]
        end = data["mcp"]["end"]
        if end.get("session_error") or end.get("stderr_traceback"):
            found.append(f"mcp server: {end}")
    return found


def test_the_smoke_run_made_its_calls(fuzzed: dict[str, Any]) -> None:
    totals = fuzzed["totals"]
    assert totals["cli_calls"] == 100 and totals["mcp_calls"] >= 20, totals
    assert totals["cli_subprocess"] >= 5 and totals["cli_in_process"] >= 50, totals
    commands = set(fuzzed["per_command"])
    assert {"navigator explore", "navigator map", "repo-map generate"} <= commands, commands


def test_no_failure_outside_the_known_items(fuzzed: dict[str, Any]) -> None:
    found = _failures(fuzzed, None)
    assert not found, "\n".join(found)


@pytest.mark.parametrize("item", [
    FS_ITEM,
    BUDGET_ITEM,
    EMPTY_ITEM,
    UI_ITEM,
    JOBS_ITEM,
    DASH_ITEM,
])
def test_known_item_is_fixed(fuzzed: dict[str, Any], item: str) -> None:
    found = _failures(fuzzed, item)
    assert not found, "\n".join(found)
