"""Regenerate the committed ResearchWorkflow histories used by the replay test.

Run from the repository root after a deliberate change to ``workflows/research.py`` or a block it
composes (nothing has been released: workflows change and these are re-recorded)::

    PYTHONPATH=. .venv/bin/python -m tests.histories.record_research [SCENARIO ...]

Scenarios (local dev server, fixture repository, real activities):

* ``full_loop`` — scripted: two plan rounds, a failed tool, a dropped and a clamped citation, FINISH;
* ``offline`` — the offline model end to end (the embedded default's path);
* ``subagents`` — scripted: a delegated research child that hits its limit and a navigator child
  (the parent's history and both children's);
* ``stop`` — scripted: a stop while a step's turn is in flight (the answer from the findings so far);
* ``interactive`` — scripted: a rejected then approved plan, an approved and a rejected step;
* ``continue_as_new`` — the full loop continuing as new (every run of the chain).

Writes ``research_<scenario>[_<part>].json``; never edit those files by hand.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import uuid
from collections.abc import Awaitable, Callable
from decimal import Decimal
from pathlib import Path

HERE = Path(__file__).resolve().parent

from temporalio.client import Client, WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from durable_navigator.navcore.navigator.messages import ApproveInput, RejectInput, StopInput
from durable_navigator.navcore.navigator.state import ExecutionMode
from durable_navigator.navcore.run.subagents import AgentProfile, ResearchCaps
from durable_navigator.workers.converter import DATA_CONVERTER
from durable_navigator.workers.worker import build_host_worker, build_worker
from durable_navigator.workflows.navigator import NAVIGATOR_SEARCH_ATTRIBUTES
from durable_navigator.workflows.research import ResearchWorkflow

from tests.conftest import temporal_binary
from tests.support.batch import priced_activities
from tests.support.navigator import wait_for
from tests.support.research import (
    FULL_LOOP,
    calls_answer,
    finish_answer,
    research_request,
    start_research,
    text_answer,
    write_research_script,
)

Scenario = Callable[[Client, str, Path], Awaitable[WorkflowHandle]]


async def full_loop(client: Client, tq: str, tmp: Path) -> WorkflowHandle:
    model = write_research_script(tmp / "script.yaml", FULL_LOOP)
    handle = await start_research(client, tq, research_request(tmp, model=model))
    await handle.result()
    return handle


async def offline(client: Client, tq: str, tmp: Path) -> WorkflowHandle:
    handle = await start_research(client, tq, research_request(tmp))
    await handle.result()
    return handle


async def subagents(client: Client, tq: str, tmp: Path) -> WorkflowHandle:
    child = write_research_script(tmp / "child.yaml", {
        "research.execute": ["", calls_answer({"name": "search_codebase", "args": {"query": "ledger"}})],
        "research.refine": [text_answer("DECISION: CONTINUE\nMISSING: everything\nREASON: one search only")],
    })
    parent = write_research_script(tmp / "parent.yaml", {
        "research.plan": [text_answer('["ask the helper", "get a context pack"]')],
        "research.execute": ["", calls_answer({"name": "delegate", "args": {"profile": "helper", "task": "what is Ledger?"}}),
                             finish_answer(("Ledger keeps usage per model", "src/budgetkit/ledger.py:20-37")),
                             calls_answer({"name": "navigate", "args": {"goal": "the budget plugin"}}),
                             finish_answer(("after_call records usage", "src/budgetkit/plugin.py:26-29"))],
        "research.refine": [text_answer("DECISION: FINISH\nREASON: enough")],
        "research.synthesize": [text_answer("Ledger keeps usage (src/budgetkit/ledger.py:20-37).")],
    })
    helper = AgentProfile(name="helper", model=child, planning="direct", budget_share=Decimal("0.5"),
                          caps=ResearchCaps(max_rounds=1, max_plan_steps=1, max_executor_turns=1, max_calls=10))
    navigator = AgentProfile(name="navigator", kind="navigate", model="offline", planning="direct", max_iterations=3,
                             token_budget=2000)
    req = research_request(tmp, model=parent, budget_usd=Decimal("0.1"),
                           profile=AgentProfile(name="researcher", may_delegate=True),
                           profiles={"helper": helper, "navigator": navigator})
    # the parent's id is its history's file name: the replay test replays under that id, and
    # the children's ids derive from it
    handle = await start_research(client, tq, req, wf_id="research_subagents_part1")
    await handle.result()
    return handle


async def stop(client: Client, tq: str, tmp: Path) -> WorkflowHandle:
    model = write_research_script(tmp / "script.yaml", {
        "research.plan": [text_answer('["read the plugin", "read the ledger"]')],
        "research.execute": ["", finish_answer(("BudgetPlugin refuses calls past the limit", "src/budgetkit/plugin.py:13-24")),
                             calls_answer({"name": "list_directory", "args": {"path": "src"}}, stall_s=30)],
        "research.synthesize": [text_answer("The plugin refuses calls past its limit (src/budgetkit/plugin.py:13-24).")],
    })
    handle = await start_research(client, tq, research_request(tmp, model=model))
    await wait_for(handle, lambda r: r.step == 1 and r.status == "thinking")
    await handle.signal(ResearchWorkflow.stop, StopInput(reason="enough", sender="rec"))
    await handle.result()
    return handle


async def interactive(client: Client, tq: str, tmp: Path) -> WorkflowHandle:
    model = write_research_script(tmp / "script.yaml", {
        "research.plan": [text_answer('["read the plugin", "read the ledger"]')],
        "research.execute": ["", finish_answer(("BudgetPlugin refuses calls", "src/budgetkit/plugin.py:21-24")),
                             finish_answer(("Ledger sums tokens per model", "src/budgetkit/ledger.py:34-37"))],
        "research.refine": [text_answer("DECISION: FINISH\nREASON: the plugin is the answer")],
        "research.synthesize": [text_answer("The plugin refuses calls (src/budgetkit/plugin.py:21-24).")],
    })
    handle = await start_research(client, tq, research_request(tmp, model=model, mode=ExecutionMode.INTERACTIVE))
    await wait_for(handle, lambda r: r.awaiting_kind == "plan" and r.awaiting_turn == 1)
    await handle.signal(ResearchWorkflow.reject, RejectInput(turn=1, kind="plan", feedback="plugin first", sender="rec"))
    await wait_for(handle, lambda r: r.awaiting_kind == "plan" and r.decisions >= 2)
    await handle.signal(ResearchWorkflow.approve, ApproveInput(turn=1, kind="plan", sender="rec"))
    await wait_for(handle, lambda r: r.awaiting_kind == "turn" and r.awaiting_turn == 3)
    await handle.signal(ResearchWorkflow.approve, ApproveInput(turn=3, kind="turn", sender="rec"))
    await wait_for(handle, lambda r: r.awaiting_kind == "turn" and r.awaiting_turn == 4)
    await handle.signal(ResearchWorkflow.reject, RejectInput(turn=4, kind="turn", feedback="not the ledger", sender="rec"))
    await handle.result()
    return handle


async def continued(client: Client, tq: str, tmp: Path) -> WorkflowHandle:
    model = write_research_script(tmp / "script.yaml", FULL_LOOP)
    handle = await start_research(client, tq, research_request(tmp, model=model, continue_as_new_events=50))
    await handle.result()
    return handle


SCENARIOS: dict[str, Scenario] = {
    "full_loop": full_loop,
    "offline": offline,
    "subagents": subagents,
    "stop": stop,
    "interactive": interactive,
    "continue_as_new": continued,
}


async def _histories(client: Client, workflow_id: str) -> list:
    runs = [e async for e in client.list_workflows(f"WorkflowId = '{workflow_id}'")]
    runs.sort(key=lambda r: r.start_time)
    return [await client.get_workflow_handle(workflow_id, run_id=r.run_id).fetch_history() for r in runs]


async def record(client: Client, out_dir: Path, only: list[str]) -> list[Path]:
    """Run every scenario (or those in ``only``); write the run's histories (and its children's)."""
    written: list[Path] = []
    for name, scenario in SCENARIOS.items():
        if only and name not in only:
            continue
        with tempfile.TemporaryDirectory() as tmp_name:
            tmp, tq = Path(tmp_name), f"record-research-{name}-{uuid.uuid4()}"
            acts = priced_activities(tmp)
            # as `navigator worker` runs: the shared queue and this host's own (scans, renders, tools)
            async with build_worker(client, tq, activities=acts), build_host_worker(client, tq, acts):
                handle = await scenario(client, tq, tmp)
                histories = await _histories(client, handle.id)
                children = [e async for e in client.list_workflows(f"ParentWorkflowId = '{handle.id}'")]
                children.sort(key=lambda c: c.id)
                for child in children:
                    histories += await _histories(client, child.id)
            for index, history in enumerate(histories):
                suffix = "" if len(histories) == 1 else f"_run{index + 1}" if not children else f"_part{index + 1}"
                path = out_dir / f"research_{name}{suffix}.json"
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
            # record everything first: a failed scenario leaves the committed files untouched
            fresh = await record(env.client, Path(staging), only)
            for old in HERE.glob("research_*.json"):
                if not only or any(old.stem == f"research_{n}" or old.stem.startswith(f"research_{n}_") for n in only):
                    old.unlink()
            for path in fresh:
                target = HERE / path.name
                target.write_text(path.read_text())
                print(f"wrote {target.relative_to(HERE.parents[1])} ({target.stat().st_size} B)")
    finally:
        await env.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
