"""``InvestigationWorkflow``: a long investigation in stages, each carried out by subagents.

scan (the goal stored, the repository indexed, every model priced) →
**planning loop** (plan maker → plan reviewer → confirmation ``{"exit",
"reason"}``; up to ``max_plan_rounds`` rounds, a rejected round re-plans with
the critique; the last plan is kept when the cap is reached) → [interactive:
approve / edit / reject(feedback) the plan] → per stage: **implementation loop**
(a worker child — a research subagent on a slice of the budget, or N
branch children compared — then a reviewer and a confirmation: loop again
with the critique or move on; at most ``max_stage_loops``; findings merged
and their citations checked by ``research.aggregate``) → compression of the
stage's record (a priced model call) → **criteria check** (each criterion met or not, with
citations then checked against the repository) → **reflection** (drop,
change or add remaining stages, and why) → **summary** (``report.md`` +
``report.json``).

Composed from :mod:`workflows.blocks` (model call, approval gate, decision
log, subagents, Web UI publisher; the planning loop and the plan's verdict
are :mod:`workflows.blocks.stage_planning`, a stage's loops, criteria check
and reflection :mod:`workflows.blocks.stage_work`). The budget is the run's hard-capped
ledger: each worker child runs on a slice reserved in it (a stage gets its
share of what is left, a loop its share of the stage's, a branch its share of
the loop's) and the orchestrator's own calls go through the same ledger. A
stop cancels the call in flight, stops the running child (it finalizes),
and writes the report from what exists. When the ledger refuses a call or a
worker's slice, an autonomous run writes its report from what exists; an
interactive one parks in ``awaiting_budget`` until ``raise_budget`` (then the
refused call is made again), a stop, or the approval timeout. Continue-as-new
between stages.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from durable_navigator.navcore.navigator.activity_io import ScanInput
    from durable_navigator.navcore.run.budget import format_usd, micros_to_usd
    from durable_navigator.navcore.investigation.investigation import (
        InvestigationRequest,
        InvestigationResult,
        InvestigationState,
        StageRecord,
        WriteReportInput,
        WriteReportOutput,
        initial_investigation_state,
    )
    from durable_navigator.navcore.investigation.report import (
        criteria_counts,
        criteria_unchecked,
        investigation_details,
        investigation_turn_report,
    )
    from durable_navigator.navcore.navigator.messages import (
        EditStagePlanInput,
        StagePlanEdited,
    )
    from durable_navigator.navcore.navigator.model_calls import InvestigateOut, InvestigateSpec
    from durable_navigator.navcore.navigator.report import TurnReport, shorten
    from durable_navigator.navcore.run_kinds import INVESTIGATION
    from durable_navigator.navcore.navigator.state import Status, StopReason
    from durable_navigator.navtypes.flightplan import FlightPlan
    from durable_navigator.workflows.blocks.model_call import CallOutcome, one_line
    from durable_navigator.workflows.blocks.options import RESULT, run_activity
    from durable_navigator.workflows.blocks.stage_planning import StagePlanning
    from durable_navigator.workflows.blocks.stage_work import BRANCH_STRATEGIES, InvestigationHooks, StageWork
    from durable_navigator.workflows.blocks.steerable import WithChildren
    from durable_navigator.workflows.blocks.subagents import SubagentRunner, SubagentSettings

__all__ = ["InvestigationWorkflow", "BRANCH_STRATEGIES"]


@workflow.defn(name=INVESTIGATION.workflow_type)
class InvestigationWorkflow(WithChildren):
    """A durable, budgeted, staged investigation with subagents, criteria checks and reflection."""

    @workflow.init
    def __init__(self, req: InvestigationRequest) -> None:
        self.req = req
        self.state: InvestigationState = initial_investigation_state(req)
        self._wire(lambda: None)
        # workers are research children that do not delegate further (depth 1 = max depth)
        self.subagents = SubagentRunner(
            lambda: self.state.ledger, lambda: self.state.children,
            SubagentSettings(repo_root=req.repo_path, model=req.model, out_dir=req.out_dir, model_call=req.model_call,
                             approval=req.approval, profiles={}, depth=0, max_depth=1,
                             min_slice_micros=req.min_child_micros),
            stopped=lambda: self.state.steering.stop_requested, count=self._count_activity, publish=self._publish,
        )
        hooks = InvestigationHooks(call=self._call, log=self._log, stop=self._stop, stop_detail=self._stop_detail,
                                   count=self._count_activity, publish=self._publish, out_of_budget=self._out_of_budget,
                                   on_host=self._on_host)
        self.planning = StagePlanning(lambda: self.state, req, self.gate, hooks)
        self.stages = StageWork(lambda: self.state, req, self.subagents, hooks)

    # -- run ------------------------------------------------------------------

    @workflow.run
    async def run(self, req: InvestigationRequest) -> InvestigationResult:
        """Plan, run the stages, write the report."""
        s = self.state
        if s.goal_ref is None:
            workflow.upsert_memo({"goal": shorten(s.goal, 2000), "repo": s.repo_root, "model": s.model,
                                  "kind": INVESTIGATION.memo_kind})
            await self._scan()
        while s.phase in ("plan", "stages"):
            try:
                if s.phase == "plan":
                    await self.planning.plan()
                else:
                    await self.stages.next_stage()
            except ActivityError as err:
                self._stop(StopReason.FAILED, one_line(err))
            if s.phase == "stages" and s.run.stop_reason is None and self._should_continue_as_new():
                await self._continue_as_new()
        return await self._finish()

    async def _scan(self) -> None:
        s = self.state
        others = sorted({p.model for p in [self.req.worker, *self.req.profiles.values()] if p.model} - {s.model})
        out = await self._scan_repo(ScanInput(repo_root=s.repo_root, flight_plan=FlightPlan(goal=s.goal[:8000]),
                                              model=s.model, goal=s.goal, other_models=others))
        s.repo_root, s.goal_ref = out.repo_root, out.goal_ref
        s.run.status = Status.THINKING

    # -- model calls ------------------------------------------------------------

    async def _call(self, kind: str, label: str, owner: StageRecord | None = None, **fields) -> InvestigateOut | None:  # type: ignore[no-untyped-def]
        """One investigation call; None when it failed (logged), was refused (stop) or stopped (stop).

        Refused by the budget in interactive mode, the run parks until a raise and makes the call again
        (the same ``index``: the refused call never reached the model).
        """
        s = self.state
        assert s.goal_ref is not None, "scan stores the goal first"
        index = s.calls.get(kind, 0)
        s.calls[kind] = index + 1
        spec = InvestigateSpec(kind=kind, index=index, model=s.model, repo_root=s.repo_root, goal_ref=s.goal_ref,
                               max_output_tokens=self.req.max_output_tokens, max_stages=self.req.max_stages,
                               records=[st.record for st in s.stages if st.record], **fields)
        while True:
            outcome = await self.caller.call(s.model, spec, step=s.run.iteration, label=label)
            s.run.iteration += 1
            if owner is not None:
                owner.calls_micros += outcome.cost_micros
            if outcome.status == "ok" and isinstance(outcome.result, InvestigateOut):
                return outcome.result
            self._log(kind, "", [], outcome, error=outcome.error or outcome.status, taken=False)
            if outcome.status != "refused" or not await self._out_of_budget(outcome.error or "the budget is exhausted"):
                break
        if outcome.status == "stopped":
            self._stop(StopReason.STOPPED, self._stop_detail())
        return None

    async def _out_of_budget(self, message: str) -> bool:
        """The ledger refused a call or a worker's slice: True when the run got a raise (interactive) and may
        try again; otherwise the run stops with ``budget_exhausted`` (the report is written from what exists)."""
        detail = await self.gate.out_of_budget(lambda: self.state.ledger, message)
        self.state.run.status = Status.THINKING
        if detail is None:
            self._log("budget_raised", f"the limit is now {format_usd(self.state.ledger.max_micros)}; going on", [])
            return True
        self._stop(StopReason.BUDGET_EXHAUSTED, detail)
        return False

    # -- finish --------------------------------------------------------------------------

    async def _finish(self) -> InvestigationResult:
        s = self.state
        s.phase = "done"
        s.run.status = Status.FINALIZING
        for st in s.stages:
            if st.status == "pending":
                st.status = "skipped"
        self._publish()
        info = workflow.info()
        reason = s.run.stop_reason or StopReason.FINALIZED
        normal = reason is StopReason.FINALIZED
        self._count_activity()
        written: WriteReportOutput = await run_activity(
            "investigate.write_report",
            WriteReportInput(out_dir=self.req.out_dir, workflow_id=info.workflow_id, repo_root=s.repo_root,
                             state_json=s.model_dump_json(), completed_normally=normal),
            WriteReportOutput, RESULT, f"write report · {reason.value} · {format_usd(s.ledger.spent_micros)}")
        s.run.status = Status.FAILED if reason is StopReason.FAILED else Status.COMPLETED
        self._publish()
        await self._ui.flush()
        await workflow.wait_condition(workflow.all_handlers_finished)
        met, total = criteria_counts(s)
        return InvestigationResult(
            workflow_id=info.workflow_id, stop_reason=reason, stop_detail=s.run.stop_detail, completed_normally=normal,
            plan_rounds=len(s.plan_rounds), stages=len(s.stages),
            stages_done=sum(1 for st in s.stages if st.status == "done"), criteria_met=met, criteria_total=total,
            criteria_unchecked=criteria_unchecked(s),
            children=list(s.children), cost_micros=s.ledger.spent_micros, cost_usd=micros_to_usd(s.ledger.spent_micros),
            max_usd=micros_to_usd(s.ledger.max_micros), usage=s.ledger.total_usage(), report_path=written.report_path,
            report_json_path=written.report_json_path, report_ref=written.report_ref,
            report_json_ref=written.report_json_ref, summary=written.summary, continued_runs=s.run.continued_runs,
            iterations=s.run.iteration, decisions=len(s.log.entries))

    # -- bookkeeping --------------------------------------------------------------------

    def _stop(self, reason: StopReason, detail: str) -> None:
        if self.state.run.stop(reason, detail):
            workflow.logger.info("investigation stopping: %s (%s)", reason.value, detail)
        if self.state.phase in ("plan", "stages"):
            self.state.phase = "summary"

    def _log(self, action: str, reasoning: str, diff: list[str], outcome: CallOutcome | None = None,
             error: str | None = None, taken: bool = True) -> None:
        self.log.write(self.state.run.iteration, action, reasoning, diff=diff,
                       cost_micros=outcome.cost_micros if outcome else 0, usage=outcome.usage if outcome else None,
                       attempts=outcome.attempts if outcome else 0, error=error, step_taken=taken)

    def _details(self) -> str:
        return investigation_details(self.state)

    # -- messages ------------------------------------------------------------------------

    def _turn_report(self) -> TurnReport:
        """The stage table, cost, children."""
        return investigation_turn_report(self.state)

    @workflow.update(name="edit_stage_plan")
    def edit_stage_plan(self, inp: EditStagePlanInput) -> StagePlanEdited:
        """Replace the stage plan awaiting its verdict by the human's (titles, tasks, criteria, profiles,
        branches, loop caps); an approval then runs it. The validator refuses a bad plan naming the field."""
        return self.planning.edit(inp)

    @edit_stage_plan.validator
    def _validate_plan_edit(self, inp: EditStagePlanInput) -> None:
        problem = self.planning.edit_problem(inp)
        if problem is not None:
            raise ValueError(problem)

    @workflow.query(name="get_investigation")
    def get_investigation(self) -> InvestigationState:
        """The whole (small) state: plan rounds, stages with their verdicts, children."""
        return self.state
