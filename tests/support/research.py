"""Helpers of the research workflow tests: requests, scripts, runs against the dev server."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import yaml
from temporalio.api.enums.v1 import PendingActivityState
from temporalio.client import Client, WorkflowHandle

from durable_navigator.navcore.navigator.model_calls import AttemptUsage
from durable_navigator.navcore.navigator.requests import ModelCallConfig
from durable_navigator.navcore.research.research import ResearchRequest, ResearchResult
from durable_navigator.workflows.research import ResearchWorkflow

from tests.support import FIXTURE_REPO

__all__ = ["RESEARCH_TIMEOUT", "research_request", "start_research", "run_research", "write_research_script",
           "FIXTURE_REPO", "QUESTION", "USAGE", "COST", "QUOTE", "FULL_LOOP", "text_answer", "calls_answer",
           "finish_answer", "wait_for_call_in_flight"]

RESEARCH_TIMEOUT = timedelta(seconds=120)
QUESTION = "why does the budget plugin double-count tokens?"


def research_request(tmp_path: Path, **kw: Any) -> ResearchRequest:
    """A research request on the fixture repository (offline model unless given)."""
    base: dict[str, Any] = dict(
        repo_path=str(FIXTURE_REPO), question=QUESTION, model="offline", budget_usd=Decimal("1"),
        out_dir=str(tmp_path / "out"), model_call=ModelCallConfig(max_attempts=1, initial_interval_s=0.1),
    )
    base.update(kw)
    return ResearchRequest(**base)


async def start_research(client: Client, task_queue: str, req: ResearchRequest, wf_id: str | None = None) -> WorkflowHandle:
    return await client.start_workflow(ResearchWorkflow.run, req, id=wf_id or f"research-{uuid.uuid4()}",
                                       task_queue=task_queue, execution_timeout=RESEARCH_TIMEOUT,
                                       memo={"goal": req.question})


async def run_research(client: Client, task_queue: str, req: ResearchRequest, wf_id: str | None = None) -> ResearchResult:
    handle = await start_research(client, task_queue, req, wf_id)
    return await handle.result()


async def wait_for_call_in_flight(client: Client, handle: WorkflowHandle, timeout_s: float = 30.0) -> None:
    """Wait until a ``model.request`` attempt runs on a worker with its provider call open (by heartbeat).

    Only then is a stop sure to cancel a call in flight that books what it consumed (the scripted
    provider meters its usage as it opens the call, before it yields): the workflow's status cannot
    say so (it stays ``thinking`` from one turn's attempt through the aggregation and the next turn's
    ``model.prepare``, when nothing is in flight and a stop books nothing).
    """
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        described = await handle.describe()
        for p in described.raw_description.pending_activities:
            if (p.activity_type.name != "model.request"
                    or p.state != PendingActivityState.PENDING_ACTIVITY_STATE_STARTED
                    or not p.heartbeat_details.payloads):
                continue
            details = await client.data_converter.decode(p.heartbeat_details.payloads)
            if details and AttemptUsage.model_validate(details[0]).in_flight_micros > 0:
                return
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("no model.request attempt had its provider call open in time")
        await asyncio.sleep(0.05)


def write_research_script(path: Path, text: dict[str, list[Any]]) -> str:
    """A ``scripted:`` file answering research kinds from ``text``; returns the model name."""
    path.write_text(yaml.safe_dump({"text": text}, sort_keys=False))
    return f"scripted:{path}"


# -- scripted research answers (priced by tests/support/batch.PRICES: $1 / $2 per million tokens) --

USAGE = {"input_tokens": 1000, "output_tokens": 100}  # 1000 × 1 + 100 × 2 = 1200 micro-USD per call
COST = 1200


def text_answer(text: str) -> dict:
    """A scripted text answer (plan, refinery, answer) with the test usage."""
    return {"text": text, "usage": USAGE}


def calls_answer(*calls: dict, stall_s: float = 0.0) -> dict:
    """A scripted executor turn calling ``calls`` (after waiting ``stall_s``, heartbeating)."""
    return {"calls": list(calls), "usage": USAGE, "stall_s": stall_s}


def finish_answer(*findings: tuple[str, str] | tuple[str, str, str]) -> dict:
    """A scripted ``finish_step`` with ``(claim, citation[, quote])`` findings."""
    return calls_answer({"name": "finish_step", "args": {"summary": "done", "findings": [
        {"claim": f[0], "citations": [f[1]], "quote": f[2] if len(f) > 2 else ""} for f in findings]}})


#: a quote only the artifact store and answer.md may hold
QUOTE = "QUOTE-MARKER-7f3a: self.after_call(model, usage)"


#: two plan rounds, a failed tool (a path escape), a bogus citation, CONTINUE then FINISH
FULL_LOOP = {
    "research.plan": [text_answer('["read the ledger", "read the plugin"]'),
                      text_answer('[{"step": "find where the stream end records usage"}]')],
    "research.execute": [
        "",  # turns are 1-based
        calls_answer({"name": "read_file", "args": {"path": "src/budgetkit/ledger.py", "start_line": 1, "end_line": 37}},
               {"name": "read_file", "args": {"path": "../../../etc/passwd"}}),
        finish_answer(("The ledger records one Usage per call", "src/budgetkit/ledger.py:20-30"),
                ("A file that does not exist", "src/budgetkit/nope.py:1-2")),
        calls_answer({"name": "search_codebase", "args": {"query": "after_call"}}),
        finish_answer(("after_call records usage and adds its price", "src/budgetkit/plugin.py:26-29")),
        finish_answer(("on_stream_end calls after_call again with the final usage", "src/budgetkit/plugin.py:31-33", QUOTE)),
    ],
    "research.refine": [text_answer("DECISION: CONTINUE\nMISSING: what the stream end does\nREASON: half of it"),
                        text_answer("DECISION: FINISH\nREASON: both calls are found")],
    "research.synthesize": [text_answer(
        "The streaming path records usage twice: after_call per chunk (src/budgetkit/plugin.py:26-29) and "
        "again at the end (src/budgetkit/plugin.py:31-33); see also src/budgetkit/nope.py:3-4 and "
        "src/budgetkit/ledger.py:30-99.")],
}
