"""Subagents as child workflows on slices of the parent's budget (deterministic workflow code).

``SubagentRunner.run(profile, task, step)``:

1. the child's slice (the profile's share of what the parent has left) is
   **reserved in the parent's ledger** — no model call of the parent can spend
   it meanwhile, and the parent's hard cap covers the child;
2. the child starts — a ``ResearchWorkflow`` (kind ``research``) or a
   ``NavigatorWorkflow`` (kind ``navigate``) — with that slice as its budget,
   a deterministic id (``<parent>-subNN-<profile>``), the profile's timeout,
   and ``subagent`` in its memo, so its publisher reports each change of
   status, iteration and cost to the parent (``child_event``) while it runs;
3. a stop of the parent is forwarded to the child (``stop``: it finalizes its
   best result), and so is a cancellation of the parent (the child still
   finalizes; the parent waits for it, then lets the cancellation go on);
4. when the child ends the reservation is reconciled with what it spent (its
   result's cost): the rest of the slice flows back. A child whose spend is
   unknown (failed, timed out, terminated) is charged its whole slice, so
   the parent's total is never under-counted.

The outcome is ``(result, completed_normally)`` as :class:`SubagentOutcome`:
``completed_normally`` is false when the child hit a limit (iterations,
budget, loop, calls), timed out, failed or was stopped.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ChildWorkflowError, TimeoutError, WorkflowAlreadyStartedError
from temporalio.workflow import ChildWorkflowCancellationType, ParentClosePolicy

with workflow.unsafe.imports_passed_through():
    from durable_navigator.navcore.run.budget import BudgetLedger, format_usd, micros_to_usd
    from durable_navigator.navcore.navigator.messages import StopInput
    from durable_navigator.navcore.navigator.report import markdown_text, shorten
    from durable_navigator.navcore.navigator.requests import ApprovalConfig, ExplorationRequest, ExplorationResult, ModelCallConfig
    from durable_navigator.navcore.research.research import ResearchRequest, ResearchResult
    from durable_navigator.navcore.run.subagents import (
        SUBAGENT_MEMO_KEY,
        AgentProfile,
        ChildEvent,
        ChildRun,
        SubagentOutcome,
        child_slice_micros,
        completed_normally,
        subagent_workflow_id,
    )
    from durable_navigator.navcore.run_kinds import EXPLORE, RESEARCH
    from durable_navigator.workflows.blocks.model_call import one_line

__all__ = ["SubagentRunner", "SubagentSettings", "RESEARCH_WORKFLOW", "NAVIGATOR_WORKFLOW"]

RESEARCH_WORKFLOW = RESEARCH.workflow_type
NAVIGATOR_WORKFLOW = EXPLORE.workflow_type
#: the longest a cancelled parent waits for a stopped child to finalize
_CANCEL_GRACE = timedelta(minutes=5)


@dataclass(frozen=True)
class SubagentSettings:
    """What every child of a run inherits from it."""

    repo_root: str
    model: str
    out_dir: str
    model_call: ModelCallConfig
    approval: ApprovalConfig
    #: profiles a research child may delegate to in turn
    profiles: dict[str, AgentProfile]
    depth: int
    max_depth: int
    min_slice_micros: int


class SubagentRunner:
    """Starts, follows and settles the subagents of one run (one at a time, like its model calls)."""

    def __init__(self, ledger: Callable[[], BudgetLedger], children: Callable[[], list[ChildRun]],
                 settings: SubagentSettings, *, stopped: Callable[[], str | None],
                 count: Callable[[], None], publish: Callable[[], None]) -> None:
        """``stopped()`` returns the parent's stop reason once a stop was asked (else None)."""
        self._ledger, self._children = ledger, children
        self.settings = settings
        self._stopped, self._count, self._publish = stopped, count, publish
        self._handles: dict[str, Any] = {}
        self._stop_sent: set[str] = set()

    # -- events --------------------------------------------------------------

    def on_event(self, event: ChildEvent) -> bool:
        """Apply a child's progress event; False (ignored) for an unknown or finished child."""
        child = next((c for c in self._children() if c.workflow_id == event.workflow_id), None)
        if child is None or not child.running:
            return False
        child.status, child.iteration, child.cost_micros = event.status, event.iteration, event.cost_micros
        child.events += 1
        return True

    # -- run -----------------------------------------------------------------

    async def run(self, profile: AgentProfile, task: str, step: int) -> SubagentOutcome:
        """Run one child to its end; never raises for a child's failure (cancellation goes on after it)."""
        model = profile.model or self.settings.model
        ledger = self._ledger()
        slice_micros = child_slice_micros(ledger, profile.budget_share, self.settings.min_slice_micros)
        wid = subagent_workflow_id(workflow.info().workflow_id, len(self._children()), profile.name)
        if slice_micros == 0:
            return self._refused(profile, wid, f"no budget left for a subagent ({format_usd(max(ledger.remaining_micros, 0))} "
                                               f"remain; it needs at least {format_usd(self.settings.min_slice_micros)})")
        reservation = ledger.reserve(model, slice_micros, step)
        child = ChildRun(workflow_id=wid, profile=profile.name, kind=profile.kind, task=shorten(task, 300), step=step,
                         slice_micros=slice_micros)
        self._children().append(child)
        self._count()
        self._publish()
        outcome = await self._start_and_wait(profile, model, task, wid, slice_micros, child)
        spent = outcome.cost_micros
        # the child's own calls and attempts are in its own ledger; the parent books its spend and tokens
        ledger.reconcile(reservation, outcome.usage, spent, calls=0, attempts=0)
        child.completed_normally, child.stop_reason = outcome.completed_normally, outcome.stop_reason
        child.cost_micros, child.detail = spent, shorten(outcome.detail or "", 500) or None
        child.result_path = outcome.result_path
        child.status = "completed" if outcome.stop_reason not in ("failed", "timed_out") else outcome.stop_reason
        self._publish()
        return outcome

    async def _start_and_wait(self, profile: AgentProfile, model: str, task: str, wid: str, slice_micros: int,
                              child: ChildRun) -> SubagentOutcome:
        kind = RESEARCH_WORKFLOW if profile.kind == "research" else NAVIGATOR_WORKFLOW
        request = self._request(profile, model, task, slice_micros)
        try:
            handle = await workflow.start_child_workflow(
                kind, request, id=wid, task_queue=workflow.info().task_queue,
                result_type=ResearchResult if profile.kind == "research" else ExplorationResult,
                execution_timeout=timedelta(seconds=profile.timeout_s),
                # a cancelled parent stops its child (which finalizes) instead of cancelling it
                cancellation_type=ChildWorkflowCancellationType.ABANDON,
                parent_close_policy=ParentClosePolicy.REQUEST_CANCEL,
                memo={SUBAGENT_MEMO_KEY: {"parent": workflow.info().workflow_id, "profile": profile.name},
                      "goal": shorten(task, 2000)},
                # markdown in the Web UI: a task's $ pairs or underscores must show as written
                static_summary=markdown_text(f"subagent {profile.name} · {shorten(task, 120)}"),
            )
        except WorkflowAlreadyStartedError:
            return self._failed(profile, wid, slice_micros, "a workflow with this subagent id already exists")
        child.status = "running"
        self._handles[wid] = handle
        try:
            await self._wait(handle, wid)
        except asyncio.CancelledError:
            await self._stop_child(wid, "the parent was cancelled")
            try:
                await workflow.wait_condition(handle.done, timeout=_CANCEL_GRACE)
            except asyncio.TimeoutError:
                workflow.logger.warning("subagent %s did not finalize within the grace period", wid)
            raise
        finally:
            self._handles.pop(wid, None)
        try:
            result = handle.result()
        except ChildWorkflowError as err:
            return self._failed(profile, wid, slice_micros, one_line(err), timed_out=isinstance(err.cause, TimeoutError))
        return self._outcome(profile, wid, result)

    async def _wait(self, handle: Any, wid: str) -> None:
        """Until the child ends; a stop of the parent is forwarded once and the wait goes on."""
        while not handle.done():
            await workflow.wait_condition(lambda: handle.done() or (self._stopped() is not None
                                                                     and wid not in self._stop_sent))
            if not handle.done() and self._stopped() is not None:
                await self._stop_child(wid, self._stopped() or "stopped")

    async def _stop_child(self, wid: str, reason: str) -> None:
        handle = self._handles.get(wid)
        if handle is None or wid in self._stop_sent:
            return
        self._stop_sent.add(wid)
        await handle.signal("stop", StopInput(reason=shorten(f"parent: {reason}", 500),
                                              sender=shorten(f"parent:{workflow.info().workflow_id}", 200)))

    async def stop_all(self, reason: str) -> None:
        """Forward a stop to every running child (they finalize their best result)."""
        for wid in sorted(self._handles):
            await self._stop_child(wid, reason)

    # -- requests and outcomes -------------------------------------------------

    def _request(self, profile: AgentProfile, model: str, task: str, slice_micros: int) -> Any:
        st = self.settings
        budget = micros_to_usd(slice_micros)
        if profile.kind == "navigate":
            return ExplorationRequest(
                repo_path=st.repo_root, goal=shorten(task, 8000), budget_usd=budget, token_budget=profile.token_budget,
                model=model, max_iterations=profile.max_iterations, out_dir=st.out_dir, model_call=st.model_call,
                approval=st.approval, planning=profile.planning,
            )
        return ResearchRequest(
            repo_path=st.repo_root, question=shorten(task, 8000), budget_usd=budget, model=model, out_dir=st.out_dir,
            model_call=st.model_call, approval=st.approval, profile=profile, profiles=st.profiles,
            depth=st.depth + 1, max_depth=st.max_depth, min_child_micros=st.min_slice_micros,
            planning="direct" if profile.planning == "direct" else "auto",
        )

    def _outcome(self, profile: AgentProfile, wid: str, result: Any) -> SubagentOutcome:
        if isinstance(result, ResearchResult):
            out = SubagentOutcome(
                workflow_id=wid, profile=profile.name, kind="research", completed_normally=result.completed_normally,
                stop_reason=result.stop_reason.value, detail=result.stop_detail, cost_micros=result.cost_micros,
                summary=shorten(result.summary, 4000), result_ref=result.answer_ref, result_path=result.answer_path,
                findings_ref=result.findings_ref,
            )
        else:
            assert isinstance(result, ExplorationResult)
            meta = result.map_metadata
            files = ", ".join(f.path for f in meta.top_files) if meta else ""
            summary = (f"context pack {result.context_path or '(not written)'}"
                       + (f"; map {meta.tokens_used}/{meta.token_budget} tokens over {meta.files_total} files" if meta else "")
                       + (f"; top files: {files}" if files else ""))
            out = SubagentOutcome(
                workflow_id=wid, profile=profile.name, kind="navigate",
                completed_normally=completed_normally(result.stop_reason.value), stop_reason=result.stop_reason.value,
                detail=result.stop_detail, cost_micros=result.cost_micros, summary=shorten(summary, 4000),
                result_ref=result.context_ref, result_path=result.context_path,
            )
        out.usage = result.usage
        return out

    def _failed(self, profile: AgentProfile, wid: str, slice_micros: int, detail: str,
                timed_out: bool = False) -> SubagentOutcome:
        # what the child spent is unknown: it is charged its whole slice (never under-counted)
        return SubagentOutcome(workflow_id=wid, profile=profile.name, kind=profile.kind, completed_normally=False,
                               stop_reason="timed_out" if timed_out else "failed", detail=shorten(detail, 500),
                               cost_micros=slice_micros)

    def _refused(self, profile: AgentProfile, wid: str, detail: str) -> SubagentOutcome:
        return SubagentOutcome(workflow_id=wid, profile=profile.name, kind=profile.kind, completed_normally=False,
                               stop_reason="budget_exhausted", detail=detail, cost_micros=0)
