"""The MCP tools start runs through the CLI's own start (``cli.launch.start_run``): the same memo, Web UI summary
and details, and the same refusal of a taken id.

Before: ``cli/mcpserver/runs.py`` had its own start, which gave MCP runs no Web UI summary or details.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import Client

from durable_navigator.cli.config import NavigatorConfig
from durable_navigator.cli.connect import TemporalSession
from durable_navigator.cli.errors import CliError
from durable_navigator.cli.mcpserver import runs
from durable_navigator.cli.runrequest import build_request, build_research_request
from tests.support import FIXTURE_REPO

GOAL = "how is the budget enforced?"


async def _summary_and_details(client: Client, run_id: str) -> tuple[str, str, dict]:
    description = await client.get_workflow_handle(run_id).describe()
    return (await description.static_summary() or "", await description.static_details() or "",
            dict(await description.memo()))


async def test_mcp_runs_carry_the_summary_details_and_memo_of_cli_runs(client: Client, task_queue: str,
                                                                        tmp_path: Path) -> None:
    config = NavigatorConfig()
    session = TemporalSession(client=client, config=config.model_copy(update={"temporal": config.temporal.model_copy(
        update={"task_queue": task_queue})}), address=client.service_client.config.target_host, ui_base=None)
    explore = build_request(FIXTURE_REPO, GOAL, config=config, interactive=False, budget_usd=None, tokens=4096,
                            model=config.model, max_iterations=None, out=tmp_path)
    ask = build_research_request(FIXTURE_REPO, GOAL, config=config, interactive=False, budget_usd=None,
                                 model=config.model, out=tmp_path)
    started = [await runs.start_run(session, explore, f"mcp-start-explore-{task_queue}"),
               await runs.start_research(session, ask, f"mcp-start-ask-{task_queue}")]
    try:
        for handle, verb, settings in ((started[0], "explore", "Map budget"), (started[1], "ask", "Profile")):
            summary, details, memo = await _summary_and_details(client, handle.id)
            assert GOAL in summary and verb in summary, summary
            assert str(FIXTURE_REPO) in details and settings in details, details
            assert memo, "no memo: `navigator ls` could not name the run"
        with pytest.raises(CliError, match="already exists"):
            await runs.start_run(session, explore, started[0].id)
    finally:
        for handle in started:
            await handle.terminate("test over")
