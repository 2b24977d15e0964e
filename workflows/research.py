"""``ResearchWorkflow``: answer a question about a repository, every claim cited ``path:start-end``.

scan (index, coarse map, the question stored) → per round: **plan** (steps; a
failed planner call falls back to one step) → [interactive: approve the plan]
→ per step: **execute** (a ReAct loop with the code tools, or a subagent) →
**aggregate** (the step's findings merged as an artifact, citations checked,
the executor's messages cleared) → [interactive: approve the step's findings]
→ compression → **refine** (FINISH, or CONTINUE with a re-plan of only what
is missing) → **synthesize** (the answer) → write ``answer.md`` +
``report.json`` with every citation checked against the repository.

Three safety layers: rounds (outer iterations), executor turns per step, and
a global cap on calls (model calls, tool calls, subagents); the guardrails
(loop / stall detection, goal anchoring, iteration and activity caps), the
hard-capped ledger, compression, stop, interactive approval and the Web UI
are the navigator's, composed from :mod:`workflows.blocks`. A stop cancels
the call in flight and still synthesizes the best answer so far (only a
second stop cancels that); running subagents are stopped too and finalize.
"""

from __future__ import annotations

import json

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from durable_navigator.navcore.navigator.activity_io import ScanInput
    from durable_navigator.navcore.run.budget import format_usd, micros_to_usd
    from durable_navigator.navcore.run.findings import FALLBACK_STEP, PlannedStep
    from durable_navigator.navcore.navigator.model_calls import (
        AnswerOut,
        RefineOut,
        ResearchPlanOut,
        ResearchPlanSpec,
        ResearchRefineSpec,
        ResearchSynthesizeSpec,
    )
    from durable_navigator.navcore.navigator.report import TurnReport, shorten
    from durable_navigator.navcore.research.research import (
        AggregateInput,
        AggregateOutput,
        AnswerState,
        ResearchRequest,
        ResearchResult,
        ResearchState,
        ResearchStep,
        ResearchView,
        WriteAnswerInput,
        WriteAnswerOutput,
        initial_research_state,
    )
    from durable_navigator.navcore.research.report import (
        research_details_markdown,
        research_report_dict,
        research_turn_report,
        research_view,
    )
    from durable_navigator.navcore.run_kinds import RESEARCH
    from durable_navigator.navcore.navigator.state import ExecutionMode, PendingTurn, Status, StopReason
    from durable_navigator.navcore.run.subagents import SubagentOutcome
    from durable_navigator.workflows.blocks.compression import Compressor
    from durable_navigator.workflows.blocks.model_call import CallOutcome, ModelCaller, one_line
    from durable_navigator.workflows.blocks.options import RESULT, SHORT
    from durable_navigator.workflows.blocks.react import ReactSettings, ReactStepRunner, StepOutcome
    from durable_navigator.workflows.blocks.steerable import WithChildren
    from durable_navigator.workflows.blocks.subagents import SubagentRunner, SubagentSettings
    from durable_navigator.workflows.blocks.tools import ToolRunner

__all__ = ["ResearchWorkflow"]


#: guard verdicts of a step → the run's stop reason
_GUARD_STOP = {"loop_detected": StopReason.LOOP_DETECTED, "activity_cap": StopReason.ACTIVITY_CAP,
               "max_iterations": StopReason.MAX_ITERATIONS, "stalled": StopReason.STALLED,
               "max_calls": StopReason.ACTIVITY_CAP}


@workflow.defn(name=RESEARCH.workflow_type)
class ResearchWorkflow(WithChildren):
    """A durable, budgeted research run: a cited answer to one question about one repository."""

    #: what a ``kind: plan`` verdict answers (in the outcome and the messages of refused verdicts)
    PLAN_NAME = "the research plan"
    #: a ``kind: turn`` verdict answers a step's findings
    TURN_NAME = "the findings of turn"

    @workflow.init
    def __init__(self, req: ResearchRequest) -> None:
        self.req = req
        self.state: ResearchState = initial_research_state(req)
        self.guard = req.run_profile()
        self._stops = 0
        self._wire(lambda: self.state.map.metadata)
        # the answer after a stop: only a second stop cancels it
        self.final_caller = ModelCaller(lambda: self.state.ledger, req.model_call, stopped=lambda: self._stops >= 2,
                                        count_activity=self._count_activity, on_attempt=self._thinking,
                                        schedule_prepare=self._on_host)
        self.tools = ToolRunner(self._room, self._count_activity, self._on_host)
        self.compressor = Compressor(self.caller, self.guard.compression, self._room)
        nested = req.depth < req.max_depth and bool(req.profiles)
        self.subagents = SubagentRunner(
            lambda: self.state.ledger, lambda: self.state.children,
            SubagentSettings(repo_root=req.repo_path, model=req.model, out_dir=req.out_dir, model_call=req.model_call,
                             approval=req.approval, profiles=req.profiles, depth=req.depth, max_depth=req.max_depth,
                             min_slice_micros=req.min_child_micros),
            stopped=lambda: self.state.steering.stop_requested, count=self._count_activity, publish=self._publish,
        ) if nested else None
        delegable = req.profiles if req.may_delegate() else {}
        navigate = next((p for p in delegable.values() if p.kind == "navigate"), None)
        caps = req.profile.caps
        self.react = ReactStepRunner(
            lambda: self.state, self.caller, self.tools, self.log, self.subagents, self.guard,
            ReactSettings(max_turns=caps.max_executor_turns, max_tool_calls=caps.max_tool_calls_per_turn,
                          max_calls=caps.max_calls, tools=list(req.profile.tools), profiles=dict(delegable),
                          can_navigate=navigate is not None, navigate_profile=navigate,
                          instructions=req.profile.system_prompt, max_output_tokens=req.max_output_tokens),
            on_child=self._child_result, spec_common=self._common, publish=self._publish,
        )

    # -- run -------------------------------------------------------------

    @workflow.run
    async def run(self, req: ResearchRequest) -> ResearchResult:
        """Plan, execute, refine until FINISH or a stop reason, then synthesize and write the answer."""
        s = self.state
        if s.goal_ref is None:
            workflow.upsert_memo({"goal": shorten(s.question, 2000), "repo": s.repo_root, "model": s.model,
                                  "kind": RESEARCH.memo_kind})
            await self._scan()
        while s.phase != "done":
            try:
                await self._advance()
            except ActivityError as err:
                # tool / aggregate infrastructure failures end the research; the answer is still written
                self._stop(StopReason.FAILED, one_line(err))
            if s.phase in ("plan", "execute") and s.run.stop_reason is None and self._should_continue_as_new():
                await self._continue_as_new()
        return await self._finish()

    async def _advance(self) -> None:
        phase = self.state.phase
        if phase == "plan":
            await self._plan()
        elif phase == "execute":
            await self._execute_next()
        elif phase == "refine":
            await self._refine()
        else:
            await self._synthesize()

    async def _scan(self) -> None:
        s = self.state
        out = await self._scan_repo(ScanInput(repo_root=s.repo_root, flight_plan=s.map.flight_plan, model=s.model,
                                              goal=s.question))
        s.repo_root, s.goal_ref, s.model_rates = out.repo_root, out.goal_ref, out.rates
        s.map.map_ref, s.map.view_ref, s.map.metadata = out.render.map_ref, out.render.view_ref, out.render.metadata
        s.map.index_version = out.index_version

    def _common(self) -> dict:
        s = self.state
        assert s.goal_ref is not None, "scan stores the question first"
        return dict(model=s.model, repo_root=s.repo_root, goal_ref=s.goal_ref, max_output_tokens=self.req.max_output_tokens,
                    findings_ref=s.findings.ref, instructions=self.req.profile.system_prompt)

    # -- plan ------------------------------------------------------------

    async def _plan(self) -> None:
        s = self.state
        if self.req.planning == "direct" and s.round == 0:
            self._add_steps([PlannedStep(description=s.question)], "planning direct: the question is the one step")
        elif await self._plan_call() is None:
            return
        if s.steering.mode is ExecutionMode.INTERACTIVE and s.run.stop_reason is None:
            await self._approve_plan()
        if s.run.stop_reason is None:
            s.feedback = None
            s.phase = "execute"

    async def _plan_call(self) -> list[PlannedStep] | None:
        """One planner call; its steps added (or the fallback step); None when the run must stop."""
        s, caps = self.state, self.req.profile.caps
        profiles = [f"{p.name}: {p.description or p.kind}" for p in self.req.profiles.values()] if self.subagents else []
        spec = ResearchPlanSpec(**self._common(), round=s.round, max_steps=caps.max_plan_steps, missing=s.missing,
                                feedback=s.feedback, done_steps=[f"[{st.status}] {st.description}" for st in s.steps],
                                profiles=profiles, map_metadata=s.map.metadata)
        while True:
            outcome = await self.caller.call(s.model, spec, step=s.run.iteration, label=f"round {s.round + 1} · plan")
            s.calls_used += 1
            if outcome.status == "ok" and isinstance(outcome.result, ResearchPlanOut):
                steps = outcome.result.steps
                self._add_steps(steps, f"round {s.round + 1}: {len(steps)} steps planned", outcome)
                return steps
            if outcome.status == "refused":
                if await self._out_of_budget(outcome, "plan"):
                    continue
                self._stop(StopReason.BUDGET_EXHAUSTED, outcome.error or "the budget is exhausted")
                return None
            if outcome.status == "stopped":
                if outcome.attempts:
                    self._log_failed("research_plan", outcome)
                self._stop(StopReason.STOPPED, self._stop_detail())
                return None
            why = shorten(f"the planner call failed ({outcome.error or outcome.status}); one fallback step", 590)
            s.plan_fallback = why
            workflow.logger.warning("research planning fallback: %s", why)
            steps = [PlannedStep(description=FALLBACK_STEP)]
            self._add_steps(steps, f"planning fallback: {why}", outcome, error=f"planning fallback: {outcome.error}")
            return steps

    def _add_steps(self, planned: list[PlannedStep], why: str, outcome: CallOutcome | None = None,
                   error: str | None = None) -> None:
        s = self.state
        first = len(s.steps)
        for i, p in enumerate(planned):
            profile = p.profile if self.subagents is not None and p.profile in self.req.profiles else None
            s.steps.append(ResearchStep(index=first + i, round=s.round, description=p.description, profile=profile))
        s.next_step = first
        lines = [shorten(f"step {st.index + 1}: {st.description}" + (f" → {st.profile}" if st.profile else ""), 300)
                 for st in s.steps[first:]]
        self._log("research_plan", why, lines, outcome, error=error)

    async def _approve_plan(self) -> None:
        """Interactive: the round's plan waits for a verdict; a rejection re-plans once with the feedback."""
        s = self.state
        for attempt in (1, 2):
            pending = PendingTurn(turn=s.round + 1, kind="plan", previous_plan=s.map.flight_plan,
                                  proposed_plan=s.map.flight_plan)
            verdict, timed_out = await self.gate.verdict(pending, f"the plan of round {s.round + 1}")
            s.run.status = Status.THINKING
            s.log.entries[-1].verdict, s.log.entries[-1].feedback = verdict, pending.feedback
            if verdict == "approve":
                return
            if verdict == "stop":
                reason = StopReason.APPROVAL_TIMEOUT if timed_out else StopReason.STOPPED
                self._stop(reason, "no verdict on the plan in time" if timed_out else self._stop_detail(pending))
                return
            # reject: the round's steps are dropped and re-planned with the feedback (once)
            for st in s.steps:
                if st.round == s.round and st.status == "pending":
                    st.status, st.verdict = "rejected", "reject"
            s.feedback = pending.feedback or "The user rejected the plan without feedback."
            if attempt == 2 or await self._plan_call() is None:
                self._add_steps([PlannedStep(description=FALLBACK_STEP)], "the re-plan was rejected too: one fallback step")
                return

    # -- execute ----------------------------------------------------------

    async def _execute_next(self) -> None:
        s = self.state
        pending = [st for st in s.steps if st.round == s.round and st.status in ("pending", "running")]
        if not pending:
            s.phase = "refine"
            return
        step = pending[0]
        s.next_step, step.status = step.index, "running"
        self._publish()
        if step.profile is not None:
            outcome = await self._delegated_step(step)
        else:
            outcome = await self.react.run(step)
        if outcome.status == "refused" and await self._out_of_budget_msg(outcome.refusal or "", f"step {step.index + 1}"):
            return  # the budget was raised: the step goes on where it was
        before = s.findings.model_copy()
        if outcome.findings_ref is not None:
            await self._aggregate(step, outcome.findings_ref, "executor")
        s.executor = None  # the executor's messages are cleared once the step is aggregated
        step.status = ("done" if outcome.status in ("finished", "capped")
                       else "skipped" if outcome.status == "stopped" else "failed")
        step.note = shorten(outcome.error, 2000) if outcome.error else None
        self._end_of_step(step, outcome)
        if s.steering.mode is ExecutionMode.INTERACTIVE and s.run.stop_reason is None:
            await self._approve_step(step, before)
        if s.run.stop_reason is None and s.steering.pending is None:
            await self.compressor.compress(s.log, model_for=lambda kind: s.model, repo_root=s.repo_root,
                                           goal_ref=s.goal_ref, step=s.run.iteration)

    def _end_of_step(self, step: ResearchStep, outcome: StepOutcome) -> None:
        """A step's end that ends the run (stop, budget, failure, guard) sets the stop reason."""
        if outcome.status == "stopped":
            self._stop(StopReason.STOPPED, self._stop_detail())
        elif outcome.status == "refused":
            self._stop(StopReason.BUDGET_EXHAUSTED, outcome.refusal or "the budget is exhausted")
        elif outcome.status == "failed":
            self._stop(StopReason.FAILED, outcome.error or "a model call failed")
        elif outcome.status == "guard":
            self._stop(_GUARD_STOP.get(outcome.guard or "", StopReason.ACTIVITY_CAP), outcome.error or "guardrail")

    async def _delegated_step(self, step: ResearchStep) -> StepOutcome:
        """A plan step handed to a subagent profile: the child's answer and findings are the step's."""
        assert self.subagents is not None and step.profile is not None
        s = self.state
        if s.calls_used >= self.req.profile.caps.max_calls:
            return StepOutcome("guard", guard="max_calls", error="the run reached its global cap on calls")
        s.calls_used += 1
        entry = self._log("delegate", step.description, [f"step {step.index + 1} → subagent {step.profile}"])
        child = await self.subagents.run(self.req.profiles[step.profile], step.description, step.index)
        entry.error = None if child.completed_normally else f"{child.workflow_id}: {child.stop_reason}"
        await self._child_result(child, step)
        step.turns = 1
        return StepOutcome("finished")

    async def _child_result(self, child: SubagentOutcome, step: ResearchStep) -> list[str]:
        """Log a child's end, merge a research child's findings, and say what it found (the executor's result)."""
        self._log("subagent_done", child.summary or (child.detail or ""), [
            f"{child.workflow_id} ({child.profile}): {child.stop_reason}, completed normally: "
            f"{'yes' if child.completed_normally else 'no'}, cost {format_usd(child.cost_micros)}"])
        if child.findings_ref is not None:
            await self._aggregate(step, child.findings_ref, f"subagent:{child.workflow_id}")
        return [f"subagent {child.workflow_id} ({child.kind}, profile {child.profile}) ended: {child.stop_reason}; "
                f"completed normally: {'yes' if child.completed_normally else 'no'}; cost {format_usd(child.cost_micros)}",
                shorten(child.summary or child.detail or "(no answer)", 3000)]

    async def _aggregate(self, step: ResearchStep, ref, source: str) -> None:  # type: ignore[no-untyped-def]
        s = self.state
        self._count_activity()
        # its citation check reads the repository through the engine: the warm host's
        out: AggregateOutput = await self._on_host(
            "research.aggregate",
            AggregateInput(repo_root=s.repo_root, step_index=step.index, current_ref=s.findings.ref, step_ref=ref,
                           source=source),
            AggregateOutput, SHORT, f"step {step.index + 1} · aggregate findings ({source})")
        s.findings = out.findings
        step.findings += out.added
        self._log("aggregate", f"step {step.index + 1}: {out.added} new findings, {out.findings.count} in all",
                  [*out.lines, *(f"dropped: {d}" for d in out.dropped)])

    async def _approve_step(self, step: ResearchStep, before) -> None:  # type: ignore[no-untyped-def]
        """Interactive: a step's findings wait for a verdict; a rejection drops them, the feedback goes to the refinery."""
        s = self.state
        pending = PendingTurn(turn=step.index + 1, kind="turn", previous_plan=s.map.flight_plan,
                              proposed_plan=s.map.flight_plan)
        verdict, timed_out = await self.gate.verdict(pending, f"step {step.index + 1}")
        s.run.status = Status.THINKING
        step.verdict = verdict
        s.log.entries[-1].verdict, s.log.entries[-1].feedback = verdict, pending.feedback
        if verdict == "approve":
            return
        if verdict == "reject":
            s.findings, step.status = before, "rejected"
            s.feedback = f"step {step.index + 1} rejected: {pending.feedback or 'no feedback'}"
            return
        reason = StopReason.APPROVAL_TIMEOUT if timed_out else StopReason.STOPPED
        self._stop(reason, f"no verdict on step {step.index + 1} in time" if timed_out else self._stop_detail(pending))

    # -- refine -------------------------------------------------------------

    async def _refine(self) -> None:
        s, caps = self.state, self.req.profile.caps
        added = sum(st.findings for st in s.steps if st.round == s.round)
        # a later round that added nothing is a stall only if the refinery still wants more: a FINISH
        # on the findings so far is a normal end, and stopping before asking would report "stalled"
        # (and tell the reader the research ended early) whenever a follow-up search found nothing new
        barren = s.round > 0 and added == 0 and not s.feedback
        spec = ResearchRefineSpec(**self._common(), round=s.round, max_rounds=caps.max_rounds,
                                  steps=[f"[{st.status}] {st.description}" for st in s.steps], feedback=s.feedback)
        while True:
            outcome = await self.caller.call(s.model, spec, step=s.run.iteration, label=f"round {s.round + 1} · refine")
            s.calls_used += 1
            if outcome.status != "refused":
                break
            if not await self._out_of_budget(outcome, "refine"):  # logged there
                self._stop(StopReason.BUDGET_EXHAUSTED, outcome.error or "the budget is exhausted")
                return
        if outcome.status != "ok" or not isinstance(outcome.result, RefineOut):
            self._log_failed("research_refine", outcome)
            if outcome.status == "stopped":
                self._stop(StopReason.STOPPED, self._stop_detail())
            else:
                # only the refinery's FINISH is a normal end: a failed call is a failed run that still
                # answers from its findings (completed_normally: false, the reason in answer.md and report.json)
                self._stop(StopReason.FAILED, f"the refinery call failed ({outcome.error}); answered with the findings "
                                              "so far, unjudged")
            return
        verdict = outcome.result
        self._log("research_refine", verdict.reason, [f"{verdict.decision.upper()}"
                                                      + (f": missing {verdict.missing}" if verdict.missing else "")],
                  outcome)
        if verdict.decision == "finish":
            self._stop(StopReason.FINALIZED, f"the refinery said FINISH: {shorten(verdict.reason, 300)}")
        elif barren:
            self._stop(StopReason.STALLED, f"round {s.round + 1} added no findings and the refinery still wants "
                                           f"{shorten(verdict.missing or '?', 200)}: another round would repeat it")
        elif s.round + 1 >= caps.max_rounds:
            self._stop(StopReason.MAX_ITERATIONS, f"{caps.max_rounds} rounds ran; still missing: {verdict.missing}")
        else:
            s.missing, s.round, s.phase = verdict.missing, s.round + 1, "plan"

    # -- synthesize and write -------------------------------------------------

    async def _synthesize(self) -> None:
        s = self.state
        reason = s.run.stop_reason
        early = None if reason is StopReason.FINALIZED else f"{reason.value if reason else '?'}: {s.run.stop_detail}"
        s.phase = "done"
        if s.findings.count == 0:
            self._log("research_answer", "no findings: nothing to synthesize", [])
            return
        caller = self.final_caller if s.steering.stop_requested is not None else self.caller
        spec = ResearchSynthesizeSpec(**self._common(), early=early)
        outcome = await caller.call(s.model, spec, step=s.run.iteration, label="synthesize the answer")
        s.calls_used += 1
        if outcome.status == "ok" and isinstance(outcome.result, AnswerOut):
            ans = outcome.result
            s.answer = AnswerState(ref=ans.answer_ref, summary=shorten(ans.summary, 2000), citations=ans.citations)
            self._log("research_answer", ans.summary, [f"{ans.citations} citations"], outcome)
        else:
            # the findings (already checked) stand as the answer
            self._log_failed("research_answer", outcome)

    async def _finish(self) -> ResearchResult:
        s = self.state
        s.run.status = Status.FINALIZING
        self._count_activity()
        self._publish()
        info = workflow.info()
        normal = s.run.stop_reason is StopReason.FINALIZED
        reason = s.run.stop_reason
        early = None if normal else f"{reason.value if reason else '?'}: {s.run.stop_detail}"
        # every citation of the answer is checked against the repository through the engine: the warm host's
        written: WriteAnswerOutput = await self._on_host(
            "research.write_answer",
            WriteAnswerInput(out_dir=self.req.out_dir, workflow_id=info.workflow_id, question=s.question,
                             repo_root=s.repo_root, answer_ref=s.answer.ref if s.answer else None,
                             findings_ref=s.findings.ref, report_json=json.dumps(
                                 research_report_dict(s, info.workflow_id, normal), sort_keys=True), early=early),
            WriteAnswerOutput, RESULT, f"write answer · {reason.value if reason else '?'} · {format_usd(s.ledger.spent_micros)}")
        s.run.status = Status.FAILED if reason is StopReason.FAILED else Status.COMPLETED
        self._publish()
        await self._ui.flush()
        await workflow.wait_condition(workflow.all_handlers_finished)
        assert reason is not None
        return ResearchResult(
            workflow_id=info.workflow_id, stop_reason=reason, stop_detail=s.run.stop_detail, completed_normally=normal,
            rounds=s.round + 1, steps=len(s.steps), iterations=s.run.iteration, decisions=s.log.logged,
            cost_micros=s.ledger.spent_micros, cost_usd=micros_to_usd(s.ledger.spent_micros),
            max_usd=micros_to_usd(s.ledger.max_micros), usage=s.ledger.total_usage(), model_attempts=s.ledger.attempts,
            findings=s.findings.count, citations=written.citations, citations_fixed=written.fixed,
            answer_path=written.answer_path, report_path=written.report_path, answer_ref=written.answer_ref,
            report_ref=written.report_ref, findings_ref=s.findings.ref, summary=written.summary, children=list(s.children),
            continued_runs=s.run.continued_runs,
        )

    # -- budget, stop, bookkeeping ------------------------------------------------

    async def _out_of_budget(self, outcome: CallOutcome, what: str) -> bool:
        self._log_failed(f"research_{what}" if what in ("plan", "refine") else what, outcome)
        return await self._out_of_budget_msg(outcome.error or "the budget is exhausted", what)

    async def _out_of_budget_msg(self, message: str, what: str) -> bool:
        """Interactive: park until the budget is raised (True: retry). Autonomous: False (the caller stops)."""
        if self.state.steering.mode is not ExecutionMode.INTERACTIVE or self.state.steering.stop_requested is not None:
            return False
        answer = await self.gate.budget_raised(lambda: self.state.ledger)
        self.state.run.status = Status.THINKING
        if answer == "raised":
            return True
        if answer == "timeout":
            self._stop(StopReason.BUDGET_EXHAUSTED, f"{message}; nobody raised the budget in time ({what})")
        return False

    def _stop(self, reason: StopReason, detail: str) -> None:
        s = self.state
        if s.run.stop(reason, detail):
            workflow.logger.info("research stopping: %s (%s)", reason.value, detail)
        if s.phase != "done":
            s.phase = "synthesize"

    def _log(self, action: str, reasoning: str, diff: list[str], outcome: CallOutcome | None = None,
             error: str | None = None):  # type: ignore[no-untyped-def]
        s = self.state
        return self.log.write(s.run.iteration, action, reasoning, diff=diff,
                              cost_micros=outcome.cost_micros if outcome else 0,
                              usage=outcome.usage if outcome else None, attempts=outcome.attempts if outcome else 0,
                              error=error, step_taken=True)

    def _log_failed(self, action: str, outcome: CallOutcome) -> None:
        self.log.write(self.state.run.iteration, action, "", cost_micros=outcome.cost_micros, usage=outcome.usage,
                       attempts=outcome.attempts, error=outcome.error or outcome.status, step_taken=False)

    def _room(self) -> bool:
        return self.state.run.activities_used < self.guard.safety.max_activities

    def _details(self) -> str:
        return research_details_markdown(research_turn_report(self.state), self.state.question, self.state)

    # -- messages --------------------------------------------------------------

    def _turn_report(self) -> TurnReport:
        """The plan with each step's status, the findings, the subagents."""
        return research_turn_report(self.state)

    def _on_stop(self) -> None:
        self._stops += 1  # a second stop also cuts the final answer's call short

    @workflow.query(name="get_research")
    def get_research(self) -> ResearchView:
        """The plan, the findings (by reference), the subagents and the answer."""
        return research_view(self.state)

