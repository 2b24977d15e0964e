"""`navigator investigate`: end to end on the embedded server, status/log/result/stop on an investigation, refusals."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio
from temporalio.client import Client

from durable_navigator.workers.devserver import port_in_use
from durable_navigator.workers.worker import build_worker

from tests.support.batch import priced_activities
from tests.support.cli import FIXTURE_REPO, ainvoke, json_of
from tests.support.e2e import NAVIGATOR, Sandbox
from tests.support.investigation import GOAL, js, stage, write_investigation_script
from tests.support.research import write_research_script


def test_investigate_on_the_embedded_server_prints_the_report(tmp_path: Path) -> None:
    box = Sandbox.create(tmp_path)
    proc = subprocess.run([str(NAVIGATOR), "investigate", str(FIXTURE_REPO), GOAL, "--out", str(tmp_path / "out")],
                          cwd=tmp_path, env=box.env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    link = re.search(r"Web UI: (\S+)", proc.stderr)
    assert link and "/workflows/inv-" in link.group(1)
    wid = link.group(1).rsplit("/", 1)[1]
    report = tmp_path / "out" / wid / "report.md"
    assert report.is_file() and "# Investigation:" in proc.stdout and "## Stage 0" in proc.stdout
    assert "completed normally: yes" in proc.stdout and "criteria met:" in proc.stdout
    assert json.loads((report.parent / "report.json").read_text())["workflow_id"] == wid
    assert not port_in_use("127.0.0.1", box.port)


@pytest_asyncio.fixture(loop_scope="session")
async def served(client: Client, task_queue: str, tmp_path: Path) -> AsyncIterator[dict[str, str]]:
    """A worker (real providers, test prices) on the test's task queue and the CLI pointed at it."""
    (tmp_path / "navigator.yaml").write_text("{}\n")
    env = {"TEMPORAL_ADDRESS": client.service_client.config.target_host, "NAVIGATOR_TASK_QUEUE": task_queue,
           "NAVIGATOR_CONFIG": str(tmp_path / "navigator.yaml")}
    async with build_worker(client, task_queue, activities=priced_activities(tmp_path)):
        yield env


async def test_status_log_result_and_stop_work_on_an_investigation(served: dict[str, str], tmp_path: Path) -> None:
    write_research_script(tmp_path / "slow.yaml", {"research.plan": [{"text": '["x"]', "stall_s": 60}]})
    model = write_investigation_script(tmp_path / "orch.yaml", {
        "investigate.plan": [js({"stages": [stage("the plugin", "after_call is found")]})],
        "investigate.review": [js({"critique": "fine"})],
        "investigate.confirm": [js({"exit": True, "reason": "ok"})],
    })
    profiles = tmp_path / "profiles.yaml"
    profiles.write_text(f"slow:\n  kind: research\n  model: 'scripted:{tmp_path / 'slow.yaml'}'\n")
    started = json_of(await ainvoke(["investigate", str(FIXTURE_REPO), GOAL, "--model", model, "--worker", "slow",
                                     "--profiles", str(profiles), "--detach", "--json",
                                     "--out", str(tmp_path / "out")], served))
    wid = started["workflow_id"]
    assert wid.startswith("inv-")
    status = None
    for _ in range(200):
        status = json_of(await ainvoke(["status", wid, "--json"], served))
        report = status["report"]
        if report and report["children"] and report["stage_plan"]:
            break
    assert status and status["report"]["workflow"] == "investigation"
    assert "the plugin" in status["report"]["stage_plan"] and "| running |" in status["report"]["stage_plan"]
    human = await ainvoke(["status", wid], served)
    assert "| # | stage | status |" in human.stdout and "subagents" in human.stdout
    listed = json_of(await ainvoke(["ls", "--json"], served))
    assert wid in [row["workflow_id"] for row in listed]
    stop = await ainvoke(["stop", wid, "--reason", "enough for now"], served)
    assert stop.exit_code == 0, stop.stderr
    result = json_of(await ainvoke(["result", wid, "--wait", "--json"], served))
    assert result["stop_reason"] == "stopped" and result["completed_normally"] is False
    assert Path(result["report_path"]).is_file()
    human_result = await ainvoke(["result", wid], served)
    assert "completed normally: no" in human_result.stdout and "report:" in human_result.stdout
    closed = await ainvoke(["status", wid], served)  # a closed run shows its own result panel
    assert closed.exit_code == 0 and "planning rounds:" in closed.stdout, closed.stderr
    log = json_of(await ainvoke(["log", wid, "--json"], served))
    assert [e["action"] for e in log["entries"]][0] == "plan_round" and len(log["children"]) == 1


async def test_bad_input_is_refused_before_anything_starts(served: dict[str, str], client: Client, task_queue: str,
                                                           tmp_path: Path) -> None:
    out = tmp_path / "out"
    cases = [
        (["investigate", str(tmp_path / "missing"), GOAL], "does not exist"),
        (["investigate", str(FIXTURE_REPO), "  "], "GOAL is empty"),
        (["investigate", str(FIXTURE_REPO), GOAL, "--budget-usd", "0"], "must be above 0"),
        (["investigate", str(FIXTURE_REPO), GOAL, "--worker", "navigator"], "is not a research profile"),
        (["investigate", str(FIXTURE_REPO), GOAL, "--model", "no-such-model"], "model"),
    ]
    for args, needle in cases:
        result = await ainvoke([*args, "--out", str(out)], served)
        assert result.exit_code == 2, (args, result.stderr)
        assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1, result.stderr
        assert needle in result.stderr, (needle, result.stderr)
    runs = [w.id async for w in client.list_workflows(f"TaskQueue = '{task_queue}'")]
    assert runs == [] and not out.exists()


async def test_explore_with_branches_keeps_the_best_pack(served: dict[str, str], tmp_path: Path) -> None:
    out = await ainvoke(["explore", str(FIXTURE_REPO), GOAL, "--branches", "2", "--tokens", "1500",
                         "--max-iterations", "3", "--json", "--out", str(tmp_path / "out")], served)
    assert out.exit_code == 0, out.stderr
    result = json_of(out)
    assert len(result["scores"]) == 2 and sum(b["kept"] for b in result["scores"]) == 1
    assert Path(result["context_path"]).is_file() and result["kept"] in result["context_path"]
    shown = await ainvoke(["result", result["workflow_id"]], served)
    assert shown.exit_code == 0 and f"kept {result['kept']}" in shown.stdout
    closed = await ainvoke(["status", result["workflow_id"]], served)
    assert closed.exit_code == 0 and f"kept {result['kept']}" in closed.stdout, closed.stderr
    refused = await ainvoke(["explore", str(FIXTURE_REPO), GOAL, "--branches", "2", "--interactive"], served)
    assert refused.exit_code == 2 and "--branches runs its explorations autonomously" in refused.stderr


def test_ls_lists_investigations_but_the_mcp_tools_only_their_own_run_types() -> None:
    from durable_navigator.cli.mcpserver.runs import KINDS
    from durable_navigator.cli.reads import build_list_query

    assert "'InvestigationWorkflow'" in build_list_query(None, None)
    assert "'ExploreBranchesWorkflow'" in build_list_query(None, None)
    mcp = build_list_query(None, None, tuple(KINDS))
    assert "Investigation" not in mcp and "Branches" not in mcp and "'ResearchWorkflow'" in mcp


def _steering_script(tmp_path: Path, n: int = 8) -> str:
    """An orchestrator whose plan names one stage; every later call answered (``n`` of each kind)."""
    return write_investigation_script(tmp_path / "orch.yaml", {
        "investigate.plan": [js({"stages": [stage("the model's stage", "something is cited")]})],
        "investigate.review": [js({"critique": "fine"})] * n, "investigate.confirm": [js({"exit": True, "reason": "ok"})] * n,
        "investigate.criteria": [js({"criteria": [{"criterion": "x", "met": False}]})] * n,
        "investigate.reflect": [js({"drop": [], "reason": "keep"})] * n,
        "investigate.compress": [js({"record": f"record {i}"}) for i in range(n)]})


def _offline_worker(tmp_path: Path) -> list[str]:
    """CLI options giving the stages a small offline worker (free; the orchestrator stays scripted)."""
    profiles = tmp_path / "profiles.yaml"
    profiles.write_text("quick:\n  kind: research\n  model: offline\n"
                        "  caps: {max_rounds: 1, max_plan_steps: 2, max_executor_turns: 3, max_calls: 30}\n")
    return ["--worker", "quick", "--profiles", str(profiles)]


async def _awaiting(served: dict[str, str], wid: str, status: str | None = None) -> dict:
    for _ in range(300):
        report = json_of(await ainvoke(["status", wid, "--json"], served))["report"]
        if report and (report["awaiting_kind"] == "plan" if status is None else report["status"] == status):
            return report
    raise AssertionError(f"{wid} never reached {status or 'a plan verdict'}")


async def test_approve_edit_runs_the_edited_plan_and_a_bad_plan_is_refused_naming_the_field(
        served: dict[str, str], tmp_path: Path) -> None:
    started = json_of(await ainvoke(["investigate", str(FIXTURE_REPO), GOAL, "--model", _steering_script(tmp_path),
                                     *_offline_worker(tmp_path), "--interactive", "--max-stages", "2",
                                     "--detach", "--json",
                                     "--out", str(tmp_path / "out")], served))
    wid = started["workflow_id"]
    await _awaiting(served, wid)
    plan = tmp_path / "plan.yaml"
    # refused here, before anything is sent: the file's own field
    plan.write_text("stages:\n  - title: the plugin\n    task: read it\n    criteria: []\n")
    bad = await ainvoke(["approve", wid, "--edit", str(plan)], served)
    assert bad.exit_code == 2 and f"{plan}: stages.0.criteria:" in bad.stderr, bad.stderr
    # refused by the run's validator: what only the run knows (its profiles, its max_stages)
    plan.write_text("stages:\n  - {title: the plugin, task: read it, criteria: [a], profile: nobody}\n")
    bad = await ainvoke(["approve", wid, "--edit", str(plan)], served)
    assert bad.exit_code == 2 and "stages.0.profile: no profile 'nobody'" in bad.stderr, bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
    still = await _awaiting(served, wid)
    assert "the model's stage" in still["stage_plan"]
    plan.write_text("stages:\n  - {title: the plugin, task: read the plugin, criteria: [after_call is cited], "
                    "max_loops: 1}\n  - {title: the ledger, task: read the ledger, criteria: [record is cited]}\n")
    ok = await ainvoke(["approve", wid, "--edit", str(plan)], served)
    assert ok.exit_code == 0, ok.stderr
    assert "now has 2 stages" in ok.stdout and "approve applied" in ok.stdout
    result = json_of(await ainvoke(["result", wid, "--wait", "--json"], served))
    assert result["completed_normally"] and result["stages"] == 2 and result["stages_done"] == 2
    report = Path(result["report_path"]).read_text()
    assert "## Stage 0: the plugin (done)" in report and "## Stage 1: the ledger (done)" in report
    assert "the model's stage" not in report


async def test_an_interactive_investigation_out_of_budget_asks_in_status_and_goes_on_after_budget(
        served: dict[str, str], tmp_path: Path) -> None:
    started = json_of(await ainvoke(["investigate", str(FIXTURE_REPO), GOAL, "--model", _steering_script(tmp_path),
                                     *_offline_worker(tmp_path), "--interactive", "--budget-usd", "0.008",
                                     "--detach", "--json",
                                     "--out", str(tmp_path / "out")], served))
    wid = started["workflow_id"]
    # each call reserves its upper bound (2048 output tokens at the test prices): the cap hits in planning or
    # in the stage, depending on the prompts' sizes; the plan's verdict is given if it is asked first
    for _ in range(300):
        report = json_of(await ainvoke(["status", wid, "--json"], served))["report"]
        if report and report["awaiting_kind"] == "plan":
            assert (await ainvoke(["approve", wid, "--plan"], served)).exit_code == 0
        elif report and report["status"] == "awaiting_budget":
            break
    else:
        raise AssertionError(f"{wid} never parked on its budget")
    assert int(float(report["cost_total_usd"].lstrip("$")) * 1_000_000) <= 8000
    human = await ainvoke(["status", wid], served)
    assert "budget exhausted" in human.stdout and f"navigator budget {wid}" in human.stdout, human.stdout
    raised = await ainvoke(["budget", wid, "0.05"], served)
    assert raised.exit_code == 0, raised.stderr
    for _ in range(300):  # a plan asked for after the raise is approved too
        report = json_of(await ainvoke(["status", wid, "--json"], served))["report"]
        if not report:
            break
        if report["awaiting_kind"] == "plan":
            assert (await ainvoke(["approve", wid, "--plan"], served)).exit_code == 0
    result = json_of(await ainvoke(["result", wid, "--wait", "--json"], served))
    assert result["stop_reason"] == "finalized" and result["completed_normally"]
    assert 8000 < result["cost_micros"] <= 58_000 and result["max_usd"] == "0.058"
