"""Host affinity of research and investigations (issue 31): the request of every model call
(``model.prepare``: it may render a map excerpt), every merge of findings (``research.aggregate``), every
evidence check (``investigate.check_evidence``) and the answer (``research.write_answer``) read the
repository's index, so they follow the scan to the host whose index is warm; the model calls themselves
(``model.request``) stay on the shared queue. When that host is gone, or refuses the task because it cannot
serve the run's model, the task runs on the shared queue and the run finishes there.

Two real workers (``tests/support/affinity.py``) on one dev server; who ran what is read from history.
"""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from typing import Any

from temporalio import activity
from temporalio.api.enums.v1 import EventType
from temporalio.exceptions import ApplicationError

from durable_navigator.navcore.investigation.investigation import InvestigationState
from durable_navigator.navcore.model.preflight import NOT_SERVED_HERE_TYPE
from durable_navigator.navcore.navigator.messages import ApproveInput
from durable_navigator.navcore.navigator.model_calls import PreparedCall, PrepareInput
from durable_navigator.navcore.navigator.report import TurnReport
from durable_navigator.navcore.navigator.state import ExecutionMode
from durable_navigator.workers.worker import build_host_worker, build_worker, host_queue
from durable_navigator.workflows.investigation import InvestigationWorkflow
from durable_navigator.workflows.research import ResearchWorkflow
from tests.support import FIXTURE_REPO
from tests.support.affinity import HOSTS, activity_runs, client_as, host_bound, opened, start_host
from tests.support.batch import priced_activities
from tests.support.investigation import investigation_request, js, stage, start_investigation
from tests.support.investigation import write_investigation_script
from tests.support.navigator import wait_for
from tests.support.research import FULL_LOOP, finish_answer, research_request, start_research, text_answer
from tests.support.research import write_research_script

REPO = str(FIXTURE_REPO)
#: how long a run waits for a host's queue before any worker takes the task (short: the tests kill hosts)
START_TIMEOUT_S = 2.0


async def _approve_until_done(handle: Any) -> None:
    """Approve every plan and step the interactive run waits on, until it ends."""
    done = asyncio.ensure_future(handle.result())
    answered: set[tuple[str, int]] = set()
    try:
        while not done.done():
            report: TurnReport = await handle.query("get_status", result_type=TurnReport)
            pending = (report.awaiting_kind or "turn", report.awaiting_turn) if report.awaiting_turn else None
            if pending is not None and pending not in answered:
                answered.add(pending)
                await handle.signal(ResearchWorkflow.approve, ApproveInput(turn=pending[1], kind=pending[0],
                                                                            sender="t"))
            await asyncio.wait([done], timeout=0.1)
    finally:
        if not done.done():
            done.cancel()
    done.result()


async def test_a_research_run_prepares_merges_and_answers_on_the_host_that_scanned(client, task_queue,
                                                                                   tmp_path) -> None:
    model = write_research_script(tmp_path / "script.yaml", FULL_LOOP)
    acts = {name: priced_activities(tmp_path) for name in HOSTS}
    async with AsyncExitStack() as stack:
        for name in HOSTS:
            await start_host(stack, await client_as(client, name), task_queue, acts[name])
        handle = await start_research(client, task_queue, research_request(tmp_path, model=model))
        result = await handle.result()
        runs = await activity_runs(handle)
    assert result.completed_normally
    bound = host_bound(runs)
    assert bound[0][0] == "navigator.scan"
    scan_host = bound[0][2]
    names = {name for name, _, _ in bound[1:]}
    # before, the requests, merges and the answer went to the shared queue: any host took them (and indexed)
    assert {"model.prepare", "research.aggregate", "research.write_answer"} <= names
    assert {r[1:] for r in bound[1:]} == {(host_queue(task_queue, scan_host), scan_host)}
    assert {queue for name, queue, _ in runs if name == "model.request"} == {task_queue}
    other = next(h for h in HOSTS if h != scan_host)
    assert opened(acts[scan_host], REPO) and not opened(acts[other], REPO)


async def _losing_the_warm_host(client, task_queue, tmp_path, start, req, finally_ask=None):
    """Start a run with both hosts up, stop the host that scanned while the plan waits for its verdict,
    approve every turn to the end; (result, activity runs, the stopped host's identity, ``finally_ask(handle)``)."""
    hosts = {name: AsyncExitStack() for name in HOSTS}
    try:
        for name, stack in hosts.items():
            await start_host(stack, await client_as(client, name), task_queue, priced_activities(tmp_path))
        handle = await start(client, task_queue, req)
        await wait_for(handle, lambda r: r.awaiting_kind == "plan", timeout_s=60)
        dead = next(identity for name, _, identity in await activity_runs(handle) if name == "navigator.scan")
        await hosts.pop(dead).aclose()  # the warm host goes away while the run waits for the plan's verdict
        await _approve_until_done(handle)
        result = await handle.result()
        runs = await activity_runs(handle)
        asked = await finally_ask(handle) if finally_ask else None
    finally:
        for stack in hosts.values():
            await stack.aclose()
    return result, runs, dead, asked


async def test_research_moves_to_the_other_host_when_the_warm_one_is_gone(client, task_queue, tmp_path) -> None:
    model = write_research_script(tmp_path / "script.yaml", {
        "research.plan": [text_answer('["read the plugin", "read the ledger"]')],
        "research.execute": ["", finish_answer(("BudgetPlugin refuses calls", "src/budgetkit/plugin.py:21-24")),
                             finish_answer(("Ledger sums tokens per model", "src/budgetkit/ledger.py:34-37"))],
        "research.refine": [text_answer("DECISION: FINISH\nREASON: the plugin is the answer")],
        "research.synthesize": [text_answer("The plugin refuses calls (src/budgetkit/plugin.py:21-24).")],
    })
    req = research_request(tmp_path, model=model, mode=ExecutionMode.INTERACTIVE,
                           host_start_timeout_s=START_TIMEOUT_S)
    result, runs, dead, _ = await _losing_the_warm_host(client, task_queue, tmp_path, start_research, req)
    assert result.completed_normally and result.findings == 2
    alive = next(h for h in HOSTS if h != dead)
    bound = host_bound(runs)
    # the plan's request before the kill on the warm host; the first index-bound task after it (the first
    # step's request) waited on the dead host's queue, never started there and ran on the shared queue;
    # everything later (requests, tools, merges, the answer) on the host that took it over
    moved = next(i for i, r in enumerate(bound) if i and r[1] == task_queue)
    assert all(r[1:] == (host_queue(task_queue, dead), dead) for r in bound[1:moved])
    assert bound[moved][0] == "model.prepare" and bound[moved][2] == alive
    after = bound[moved + 1:]
    assert {"model.prepare", "research.aggregate", "research.write_answer"} <= {r[0] for r in after}
    assert {r[1:] for r in after} == {(host_queue(task_queue, alive), alive)}


INVESTIGATION = {
    "investigate.plan": [js({"stages": [stage("the plugin", "after_call is found", "a missing file is cited")]})],
    "investigate.review": [js({"critique": "fine"})],
    "investigate.confirm": [js({"exit": True, "reason": "ok"})],
    "investigate.criteria": [js({"criteria": [
        {"criterion": "after_call is found", "met": True, "evidence": ["src/budgetkit/plugin.py:26-29"]},
        {"criterion": "a missing file is cited", "met": True, "evidence": ["src/budgetkit/nope.py:1-2"]}]})],
    "investigate.reflect": [js({"drop": [], "reason": "keep"})],
    "investigate.compress": [js({"record": "after_call records usage (src/budgetkit/plugin.py:26-29)"})],
}


def _evidence_checked(state: InvestigationState) -> None:
    """The evidence check ran: the existing citation kept, the missing file's claim refused."""
    met = {c.criterion: c.status for s in state.stages for c in s.criteria_status}
    assert met == {"after_call is found": "met", "a missing file is cited": "not_met"}


async def test_an_investigation_checks_evidence_on_the_host_that_scanned(client, task_queue, tmp_path) -> None:
    model = write_investigation_script(tmp_path / "orch.yaml", INVESTIGATION)
    async with AsyncExitStack() as stack:
        for name in HOSTS:
            await start_host(stack, await client_as(client, name), task_queue, priced_activities(tmp_path))
        handle = await start_investigation(client, task_queue,
                                           investigation_request(tmp_path, model=model, max_stages=1))
        result = await handle.result()
        runs = await activity_runs(handle)
        state = await handle.query(InvestigationWorkflow.get_investigation)
    assert result.completed_normally
    _evidence_checked(state)
    bound = host_bound(runs)
    assert bound[0][0] == "navigator.scan"
    scan_host = bound[0][2]
    # the stage worker is a child run (its own scan, its own host); the parent's own index-bound tasks stay
    assert {"model.prepare", "research.aggregate", "investigate.check_evidence"} <= {r[0] for r in bound[1:]}
    assert {r[1:] for r in bound[1:]} == {(host_queue(task_queue, scan_host), scan_host)}
    assert {queue for name, queue, _ in runs if name == "model.request"} == {task_queue}


async def test_an_investigation_finishes_on_the_other_host_when_the_warm_one_is_gone(client, task_queue,
                                                                                     tmp_path) -> None:
    model = write_investigation_script(tmp_path / "orch.yaml", INVESTIGATION)
    req = investigation_request(tmp_path, model=model, max_stages=1, mode=ExecutionMode.INTERACTIVE,
                                host_start_timeout_s=START_TIMEOUT_S)
    result, runs, dead, state = await _losing_the_warm_host(
        client, task_queue, tmp_path, start_investigation, req,
        lambda handle: handle.query(InvestigationWorkflow.get_investigation))
    assert result.completed_normally
    _evidence_checked(state)
    alive = next(h for h in HOSTS if h != dead)
    bound = host_bound(runs)
    moved = next(i for i, r in enumerate(bound) if i and r[1] == task_queue)
    assert all(r[1:] == (host_queue(task_queue, dead), dead) for r in bound[1:moved])
    assert bound[moved][2] == alive
    after = bound[moved + 1:]
    assert "investigate.check_evidence" in {r[0] for r in after}
    assert {r[1:] for r in after} == {(host_queue(task_queue, alive), alive)}


@activity.defn(name="model.prepare")
async def _refuse(inp: PrepareInput) -> PreparedCall:
    """A host that cannot serve the run's model (its configuration changed since the scan)."""
    raise ApplicationError(f"this host cannot serve model {inp.model!r}", type=NOT_SERVED_HERE_TYPE,
                           non_retryable=True)


async def test_a_request_the_host_refuses_as_not_served_goes_to_the_shared_queue(client, task_queue,
                                                                                 tmp_path) -> None:
    """Refused on the warm host's queue, a model request runs at once on the shared queue: asking that host
    again (the only worker of its queue) would be refused for the whole hand-back window (2 min)."""
    model = write_research_script(tmp_path / "script.yaml", FULL_LOOP)
    acts = priced_activities(tmp_path)
    named = await client_as(client, "host-a")
    # one host: the shared queue served as usual, its own queue refusing every model request
    async with build_worker(named, task_queue, activities=acts), \
            build_host_worker(named, task_queue, acts, extra_activities=[_refuse]):
        started = asyncio.get_running_loop().time()
        handle = await start_research(client, task_queue, research_request(tmp_path, model=model))
        result = await handle.result()
        took = asyncio.get_running_loop().time() - started
        runs = await activity_runs(handle)
        refused = [e async for e in handle.fetch_history_events()
                   if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED]
    assert result.completed_normally and took < 60
    prepares = [queue for name, queue, _ in runs if name == "model.prepare"]
    calls = len([r for r in runs if r[0] == "model.request"])
    # each request: refused once on the host's queue, then prepared on the shared queue (whose result names
    # the host again: the same worker process serves both queues here)
    assert prepares == [acts.host_queue, task_queue] * calls
    assert len(refused) == calls
    assert all(NOT_SERVED_HERE_TYPE in str(e.activity_task_failed_event_attributes.failure) for e in refused)
