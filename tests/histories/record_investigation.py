"""Regenerate the committed InvestigationWorkflow histories used by the replay test.

Run from the repository root after a deliberate change to ``workflows/investigation.py`` or a block it
composes (nothing has been released: workflows change and these are re-recorded)::

    PYTHONPATH=. .venv/bin/python -m tests.histories.record_investigation [SCENARIO ...]

Scenarios (local dev server, fixture repository, real activities, offline workers):

* ``scripted`` — a rejected then accepted plan round, a stage looping twice, criteria met with existing
  evidence and one not, a reflection dropping a stage;
* ``offline`` — the offline model end to end (the embedded default's path);
* ``stop`` — a stop while a stage's worker is running;
* ``branches`` — branch-and-compare of two workers;
* ``continue_as_new`` — the offline run continuing as new between stages (every run of the chain);
* ``explore_branches`` — ``ExploreBranchesWorkflow`` (``navigator explore --branches 2``), offline;
* ``steering`` — interactive: a refused plan edit, an edit with a loop cap, the approval, then the run
  parked on its exhausted budget until ``raise_budget``.

Each run's workflow id is its file's stem without ``_run<n>`` (its children's ids derive from it, and the
replay test replays under that id). Writes ``investigation_<scenario>[_run<n>].json`` (the parent's runs only: its children are
``ResearchWorkflow`` runs, replayed by the research histories); never edit those files by hand.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import uuid
from datetime import timedelta
from collections.abc import Awaitable, Callable
from pathlib import Path

from decimal import Decimal

from temporalio.client import Client, WorkflowHandle, WorkflowUpdateFailedError
from temporalio.testing import WorkflowEnvironment

from durable_navigator.navcore.investigation.investigation import PlannedStage
from durable_navigator.navcore.navigator.messages import EditStagePlanInput, RaiseBudgetInput, StopInput, VerdictInput
from durable_navigator.navcore.navigator.state import ExecutionMode
from durable_navigator.workers.converter import DATA_CONVERTER
from durable_navigator.workers.worker import build_host_worker, build_worker
from durable_navigator.workflows.branches import ExploreBranchesWorkflow
from durable_navigator.workflows.investigation import InvestigationWorkflow
from durable_navigator.workflows.navigator import NAVIGATOR_SEARCH_ATTRIBUTES

from tests.conftest import temporal_binary
from tests.support.batch import priced_activities
from tests.support.investigation import branch_request, investigation_request, js, stage, start_investigation
from tests.support.investigation import worker_profile
from tests.support.investigation import write_investigation_script
from tests.support.navigator import wait_for
from tests.support.research import finish_answer, text_answer, write_research_script

HERE = Path(__file__).resolve().parent
Scenario = Callable[[Client, str, Path], Awaitable[WorkflowHandle]]
PLAN = [stage("the plugin", "after_call is found", "a missing file is cited"),
        stage("the ledger", "Ledger.record is found"), stage("the tests", "a test of the plugin is found")]


async def scripted(client: Client, tq: str, tmp: Path) -> WorkflowHandle:
    model = write_investigation_script(tmp / "orch.yaml", {
        "investigate.plan": [js({"stages": PLAN[:2]}), js({"stages": PLAN})],
        "investigate.review": [js({"critique": "the tests are not covered"}), js({"critique": "good now"}),
                               js({"critique": "find more"}), js({"critique": "enough"}), js({"critique": "ok"})],
        "investigate.confirm": [js({"exit": False, "reason": "add the tests"}), js({"exit": True, "reason": "ok"}),
                                js({"exit": False, "reason": "again"}), js({"exit": True, "reason": "done"}),
                                js({"exit": True, "reason": "done"})],
        "investigate.criteria": [
            js({"criteria": [
                {"criterion": "after_call is found", "met": True, "evidence": ["src/budgetkit/plugin.py:26-29"]},
                {"criterion": "a missing file is cited", "met": True, "evidence": ["src/budgetkit/nope.py:1-2"]}]}),
            js({"criteria": [{"criterion": "Ledger.record is found", "met": True,
                              "evidence": ["src/budgetkit/ledger.py:20-30"]}]})],
        "investigate.reflect": [js({"drop": [2], "reason": "the tests were read in stage 0"})],
        "investigate.compress": [js({"record": "after_call records usage (src/budgetkit/plugin.py:26-29)"}),
                                 js({"record": "Ledger.record appends (src/budgetkit/ledger.py:20-30)"})],
    })
    handle = await start_investigation(client, tq, investigation_request(tmp, model=model, max_stages=3),
                                       wf_id="investigation_scripted")
    await handle.result()
    return handle


async def offline(client: Client, tq: str, tmp: Path) -> WorkflowHandle:
    handle = await start_investigation(client, tq, investigation_request(tmp), wf_id="investigation_offline")
    await handle.result()
    return handle


async def stop(client: Client, tq: str, tmp: Path) -> WorkflowHandle:
    child = write_research_script(tmp / "child.yaml", {
        "research.plan": [text_answer('["read the ledger", "list the sources"]')],
        "research.execute": ["", finish_answer(("Ledger.record appends usage", "src/budgetkit/ledger.py:20-30")),
                             {"calls": [{"name": "list_directory", "args": {"path": "src"}}], "stall_s": 30}],
        "research.synthesize": [text_answer("Ledger.record appends usage (src/budgetkit/ledger.py:20-30).")],
    })
    model = write_investigation_script(tmp / "orch.yaml", {
        "investigate.plan": [js({"stages": PLAN[:2]})], "investigate.review": [js({"critique": "fine"})],
        "investigate.confirm": [js({"exit": True, "reason": "ok"})]})
    handle = await start_investigation(client, tq, investigation_request(tmp, model=model, worker=worker_profile(model=child)),
                                       wf_id="investigation_stop")
    await wait_for(handle, lambda r: any(c.iteration >= 1 and c.completed_normally is None for c in r.children),
                   timeout_s=60)
    await asyncio.sleep(1.0)
    await handle.signal(InvestigationWorkflow.stop, StopInput(reason="enough", sender="rec"))
    await handle.result()
    return handle


async def branches(client: Client, tq: str, tmp: Path) -> WorkflowHandle:
    handle = await start_investigation(client, tq, investigation_request(tmp, branches=2, max_stage_loops=1),
                                       wf_id="investigation_branches")
    await handle.result()
    return handle


async def continued(client: Client, tq: str, tmp: Path) -> WorkflowHandle:
    handle = await start_investigation(client, tq, investigation_request(tmp, continue_as_new_events=50),
                                       wf_id="investigation_continue_as_new")
    await handle.result()
    return handle


async def explore_branches(client: Client, tq: str, tmp: Path) -> WorkflowHandle:
    handle = await client.start_workflow(ExploreBranchesWorkflow.run, branch_request(tmp),
                                         id="investigation_explore_branches", task_queue=tq,
                                         execution_timeout=timedelta(seconds=180))
    await handle.result()
    return handle


async def steering(client: Client, tq: str, tmp: Path) -> WorkflowHandle:
    many = 8
    model = write_investigation_script(tmp / "orch.yaml", {
        "investigate.plan": [js({"stages": [stage("the model's stage", "x")]})],
        "investigate.review": [js({"critique": "fine"})] * many,
        "investigate.confirm": [js({"exit": True, "reason": "ok"})] * many,
        "investigate.criteria": [js({"criteria": [{"criterion": "x", "met": False}]})] * many,
        "investigate.reflect": [js({"drop": [], "reason": "keep"})] * many,
        "investigate.compress": [js({"record": f"record {i}"}) for i in range(many)]})
    req = investigation_request(tmp, model=model, mode=ExecutionMode.INTERACTIVE, max_stages=2, max_stage_loops=1,
                                budget_usd=Decimal("0.0062"), max_output_tokens=256)
    handle = await start_investigation(client, tq, req, wf_id="investigation_steering")
    turn = (await wait_for(handle, lambda r: r.awaiting_kind == "plan", timeout_s=60)).awaiting_turn or 0
    edited = [PlannedStage(title="the plugin", task="read the plugin", criteria=["x"], max_loops=1),
              PlannedStage(title="the ledger", task="read the ledger", criteria=["x"])]
    try:
        await handle.execute_update(InvestigationWorkflow.edit_stage_plan, EditStagePlanInput(
            turn=turn, stages=[edited[0].model_copy(update={"profile": "nobody"})], sender="rec"))
    except WorkflowUpdateFailedError:
        pass  # refused by the validator: never in history
    await handle.execute_update(InvestigationWorkflow.edit_stage_plan,
                                EditStagePlanInput(turn=turn, stages=edited, sender="rec"))
    await handle.execute_update(InvestigationWorkflow.submit_verdict,
                                VerdictInput(verdict="approve", turn=turn, kind="plan", sender="rec"))
    await wait_for(handle, lambda r: r.status == "awaiting_budget", timeout_s=60)
    await handle.signal(InvestigationWorkflow.raise_budget, RaiseBudgetInput(add_usd=Decimal("0.05"), sender="rec"))
    await handle.result()
    return handle


SCENARIOS: dict[str, Scenario] = {"scripted": scripted, "offline": offline, "stop": stop, "branches": branches,
                                  "continue_as_new": continued, "explore_branches": explore_branches,
                                  "steering": steering}


async def _histories(client: Client, workflow_id: str) -> list:
    runs = [e async for e in client.list_workflows(f"WorkflowId = '{workflow_id}'")]
    runs.sort(key=lambda r: r.start_time)
    return [await client.get_workflow_handle(workflow_id, run_id=r.run_id).fetch_history() for r in runs]


async def record(client: Client, out_dir: Path, only: list[str]) -> list[Path]:
    """Run every scenario (or those in ``only``); write the parent's histories."""
    written: list[Path] = []
    for name, scenario in SCENARIOS.items():
        if only and name not in only:
            continue
        with tempfile.TemporaryDirectory() as tmp_name:
            tmp, tq = Path(tmp_name), f"record-investigation-{name}-{uuid.uuid4()}"
            acts = priced_activities(tmp)
            # as `navigator worker` runs: the shared queue and this host's own (scans, renders, tools)
            async with build_worker(client, tq, activities=acts), build_host_worker(client, tq, acts):
                handle = await scenario(client, tq, tmp)
                histories = await _histories(client, handle.id)
            for index, history in enumerate(histories):
                suffix = "" if len(histories) == 1 else f"_run{index + 1}"
                path = out_dir / f"investigation_{name}{suffix}.json"
                path.write_text(history.to_json())
                written.append(path)
    return written


async def main() -> None:
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=temporal_binary(), data_converter=DATA_CONVERTER,
        search_attributes=NAVIGATOR_SEARCH_ATTRIBUTES,
    )
    try:
        only = sys.argv[1:]
        unknown = sorted(set(only) - set(SCENARIOS))
        if unknown:
            raise SystemExit(f"unknown scenario(s) {unknown}; pick from {sorted(SCENARIOS)}")
        with tempfile.TemporaryDirectory() as staging:
            fresh = await record(env.client, Path(staging), only)
            for old in HERE.glob("investigation_*.json"):
                if not only or any(old.stem == f"investigation_{n}" or old.stem.startswith(f"investigation_{n}_")
                                   for n in only):
                    old.unlink()
            for path in fresh:
                target = HERE / path.name
                target.write_text(path.read_text())
                print(f"wrote {target.relative_to(HERE.parents[1])} ({target.stat().st_size} B)")
    finally:
        await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
