"""``navigator explore --tokens N``: the context.md a user gets is never over N tokens (cl100k_base).

The real CLI against the session's Temporal dev server and a real worker (real activities, the
offline model, the repo-map engine). Small budgets make the frame give way and the map re-render;
what falls out of context.md is in report.json.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from temporalio.client import Client as TemporalClient

from tests.support.cli import FIXTURE_REPO
from tests.support.e2e import NAVIGATOR

from durable_navigator.repomap.tokens import count_tokens
from durable_navigator.workers.worker import build_activities

GOAL = "why are tokens double-counted in budget enforcement?"
BUDGETS = (26, 100, 500, 1200, 8192)


@pytest.fixture
def cli_env(client: TemporalClient, task_queue: str, tmp_path: Path) -> dict[str, str]:
    """The CLI's environment: the session's dev server, this test's task queue, everything else under tmp."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPORAL_", "NAVIGATOR_", "GEMINI_", "GOOGLE_"))}
    (tmp_path / "navigator.yaml").write_text("{}\n")
    env.update(TEMPORAL_ADDRESS=client.service_client.config.target_host, NAVIGATOR_TASK_QUEUE=task_queue,
               NAVIGATOR_CONFIG=str(tmp_path / "navigator.yaml"), XDG_STATE_HOME=str(tmp_path / "state"),
               XDG_CACHE_HOME=str(tmp_path / "cache"), COLUMNS="200")
    return env


async def _explore(env: dict[str, str], repo: Path, out: Path, budget: int) -> dict[str, object]:
    argv = [str(NAVIGATOR), "explore", "--tokens", str(budget), "--max-iterations", "3", "--json",
            "--out", str(out), "--", str(repo), GOAL]
    proc = await asyncio.to_thread(subprocess.run, argv, env=env, cwd=out.parent, capture_output=True,
                                   text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, object] = json.loads(proc.stdout)
    return result


async def test_context_md_fits_every_budget_and_report_json_keeps_the_rest(
        cli_env: dict[str, str], start_worker, tmp_path: Path) -> None:
    repo = Path(shutil.copytree(FIXTURE_REPO, tmp_path / "budgetkit"))
    (repo / "vendor").mkdir()
    for i in range(40):  # files the index skips: the frame lists them
        (repo / "vendor" / f"bundle_{i}.min.js").write_text("var a=1;" * 400 + "\n")
    out = tmp_path / "out"
    async with start_worker(build_activities(tmp_path / "artifacts")):
        for budget in BUDGETS:
            result = await _explore(cli_env, repo, out, budget)
            context_path = Path(str(result["context_path"]))
            text = context_path.read_text(encoding="utf-8")
            tokens = count_tokens(text)
            assert tokens <= budget, (budget, tokens)
            pack = result["pack"]
            assert isinstance(pack, dict)
            assert pack["token_budget"] == budget and pack["tokens"] == tokens
            assert text.startswith("# Context") and "\n## Repository map\n\n" in text
            report = json.loads((context_path.parent / "report.json").read_text(encoding="utf-8"))
            kept = report["pack"]
            # everything context.md may have dropped is in report.json
            assert kept["tokens"] == tokens and kept["summary"] and report["decisions"]
            assert kept["files_not_in_map_text"].count("bundle_") == 15  # the skipped list as the frame renders it
            if pack["map_rerendered"] or pack["map_left_out"]:
                assert kept["run_map"].startswith("# repo-map ")
            if budget <= 500:  # the frame gave way
                assert pack["shortened"], pack
            if budget == 26:
                assert pack["map_left_out"] and "see report.json" in text
            if budget >= 1200:  # the map is rendered at what the frame leaves, never left out
                assert not pack["map_left_out"] and pack["map_tokens"] > 0
                assert text.split("\n## Repository map\n\n", 1)[1].startswith("# repo-map ")
