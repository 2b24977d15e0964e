"""``NavigatorWorkflow``: one durable, budgeted, inspectable exploration.

scan → planning phase (stages) → per iteration: guardrails → the model's turn
(a priced model call: the budget is a hard cap, a stop cancels it in flight)
→ apply it (code tools, a flight-plan update re-rendered, or finalize) → log →
in interactive mode wait for a verdict → stage progress → compression … until
the model finalizes or a stop reason applies; every stop still writes the best
map so far. Composed from the building blocks of :mod:`workflows.blocks`.

Only references to maps and prompts enter history. The workflow continues as
new when the server suggests it or at ``continue_as_new_events``, carrying its
whole state, after every message handler has finished.
"""

from __future__ import annotations

import json

from pydantic import ValidationError
from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from durable_navigator.navcore.navigator.activity_io import (
        PromptInput,
        RenderMapInput,
        RenderOutput,
        ScanInput,
        WriteResultInput,
        WriteResultOutput,
    )
    from durable_navigator.navcore.run.budget import format_usd, micros_to_usd
    from durable_navigator.navtypes.flightplan import FlightPlan, FlightPlanUpdate
    from durable_navigator.navcore.navigator.guardrails import RunProgress, check_guardrails, observe, record_iteration
    from durable_navigator.navcore.navigator.messages import (
        EditFlightPlanInput,
    )
    from durable_navigator.navcore.navigator.model_calls import DecideSpec, DecisionOut
    from durable_navigator.navcore.navigator.prompt import GOAL_SLOT
    from durable_navigator.navcore.navigator.report import (
        TurnReport,
        build_turn_report,
        plan_diff_lines,
        short_action_label,
        shorten,
        turn_report_markdown,
        update_diff_lines,
    )
    from durable_navigator.navcore.navigator.requests import ExplorationRequest, ExplorationResult
    from durable_navigator.navcore.run_kinds import EXPLORE
    from durable_navigator.navcore.model.routing import route_call, switch_line
    from durable_navigator.navcore.navigator.state import (
        DecisionLogEntry,
        ExecutionMode,
        NavigatorState,
        PendingTurn,
        Status,
        StopReason,
    )
    from durable_navigator.navcore.navigator.turns import (
        MODEL_SWITCH_ACTION,
        apply_edit,
        edited_plan,
        initial_state,
        propose_turn,
        recent_decisions,
        report_dict,
        restore_turn,
    )
    from durable_navigator.workflows.blocks.compression import Compressor
    from durable_navigator.workflows.blocks.model_call import CallOutcome, one_line
    from durable_navigator.workflows.blocks.options import RESULT, SHORT
    from durable_navigator.workflows.blocks.stages import StageRunner, StageSettings
    from durable_navigator.workflows.blocks.steerable import SteerableRun
    from durable_navigator.workflows.blocks.tools import ToolRunner, tool_result_lines
    from durable_navigator.workflows.blocks.webui import (
        NAVIGATOR_SEARCH_ATTRIBUTES,
        SA_COST_USD,
        SA_ITERATION,
        SA_REPO,
        SA_STATUS,
    )

__all__ = [
    "NavigatorWorkflow",
    "SA_REPO",
    "SA_STATUS",
    "SA_COST_USD",
    "SA_ITERATION",
    "NAVIGATOR_SEARCH_ATTRIBUTES",
]

#: final summary kept in state (the full one is in the decision artifact)
_SUMMARY_CHARS = 2000


@workflow.defn(name=EXPLORE.workflow_type)
class NavigatorWorkflow(SteerableRun):
    """A durable exploration of one repository for one goal."""

    @workflow.init
    def __init__(self, req: ExplorationRequest) -> None:
        self.req = req
        self.state: NavigatorState = initial_state(req)
        self.profile = req.run_profile()
        self._wire(lambda: self.state.map.metadata)
        self.tools = ToolRunner(self._room, self._count_activity, self._on_host)
        self.compressor = Compressor(self.caller, self.profile.compression, self._room)
        cfg = self.profile.planning
        review = cfg.review or req.review
        self.stages = StageRunner(
            lambda: self.state, self.caller, self.log, self.gate,
            StageSettings(config=cfg if review == cfg.review else cfg.model_copy(update={"review": review}),
                          planning=req.planning, max_iterations=req.max_iterations,
                          max_stage_iterations=self.profile.safety.max_stage_iterations),
            self._stop, self._publish, model_for=lambda kind: self._model_for(kind, self.state.run.iteration),
        )

    # -- run -------------------------------------------------------------

    @workflow.run
    async def run(self, req: ExplorationRequest) -> ExplorationResult:
        """Explore until a stop reason applies, then write the result."""
        s = self.state
        if s.map.map_ref is None:
            # the goal in the memo makes runs findable in the Web UI even without the CLI's memo
            workflow.upsert_memo({"goal": shorten(s.goal, 2000), "repo": s.repo_root, "model": s.model})
            await self._scan()
            if self.req.planning != "off" and s.run.stop_reason is None:
                await self.stages.plan_phase()
        while s.run.stop_reason is None:
            try:
                await self._iteration()
            except ActivityError as err:
                # render/tool infrastructure failures end the run, but the best map so far is still written
                self._stop(StopReason.FAILED, one_line(err))
            if s.run.stop_reason is None and self._should_continue_as_new():
                await self._continue_as_new()
        return await self._finalize()

    async def _scan(self) -> None:
        s = self.state
        out = await self._scan_repo(ScanInput(
            repo_root=s.repo_root, flight_plan=s.map.flight_plan, model=s.model, goal=s.goal,
            other_models=[m for m in self.profile.routing.models() if m != s.model]))
        s.repo_root, s.map.index_version, s.goal_ref = out.repo_root, out.index_version, out.goal_ref
        s.model_rates = out.rates
        s.prices = dict(out.rates_by_model)
        self._take_render(out.render)

    # -- one iteration ---------------------------------------------------

    async def _iteration(self) -> None:
        s = self.state
        if self._stop_requested():
            self._stop(StopReason.STOPPED, f"{s.steering.stop_requested} (by {s.steering.stop_sender})")
            return
        if s.run.iteration >= self.req.max_iterations:
            self._stop(StopReason.MAX_ITERATIONS, f"reached {self.req.max_iterations} iterations")
            return
        step = s.run.iteration + 1
        verdict = check_guardrails(
            self.profile, s.guard, RunProgress(goal=GOAL_SLOT, iteration=step, activities_used=s.run.activities_used))
        if verdict.stop_reason is not None:
            self._stop(StopReason(verdict.stop_reason), _guard_detail(verdict.stop_reason, verdict.loop_repeats))
            return
        s.run.status = Status.PREPARING
        self._publish()
        model = self._model_for("decide", step)
        outcome = await self.caller.call(model, self._decide_spec(step, verdict.prompt_notes, model), step=step,
                                         label=f"iter {step} · decide")
        if outcome.status != "ok":
            await self._call_not_answered(step, outcome)
            return
        assert isinstance(outcome.result, DecisionOut)
        s.run.iteration, s.log.last_cost_micros, s.steering.feedback = step, outcome.cost_micros, None
        s.tool_results = []  # shown once, in the prompt of this decision
        observed = await self._apply(step, outcome.result, outcome)
        d = outcome.result.decision
        tools = d.tool_calls if d.action == "call_tools" and d.tool_calls else None
        s.guard = record_iteration(
            self.profile, s.guard,
            observe(step, d.action, d.reasoning, d.updates, observed, s.map.metadata, self.profile, tools),
        )
        if s.stages.plan is not None and s.steering.pending is None:
            stage_before = s.stages.index
            await self.stages.after_step()
            if s.stages.index != stage_before:
                # a new stage: its moves are not repeats of the last stage's. A stage with nothing
                # to add ends on the plan the one before ended on; counted across stages, four
                # such ends stopped whole runs as "loop_detected" (12% of the benchmark's runs)
                s.guard = s.guard.model_copy(update={"window": []})
        if s.run.stop_reason is None and s.steering.pending is None:
            await self.compressor.compress(s.log, model_for=lambda kind: self._model_for(kind, s.run.iteration),
                                           repo_root=s.repo_root, goal_ref=s.goal_ref, step=s.run.iteration)

    def _model_for(self, kind: str, step: int) -> str:
        """The model of the next ``kind`` call (budget-aware routing); a switch is logged with its reason."""
        s = self.state
        model, switch = route_call(s.routing, self.profile.routing, s.model, kind, s.ledger.spent_micros,
                                   s.ledger.max_micros, step)
        if switch is not None:
            workflow.logger.info("routing: %s", switch_line(switch))
            self.log.write(step, MODEL_SWITCH_ACTION, switch.reason,
                           diff=[f"~ {switch.kind}: {switch.from_model} → {switch.to_model}"], step_taken=False)
        return model

    def _decide_spec(self, step: int, notes: list[str], model: str) -> DecideSpec:
        s = self.state
        assert s.map.map_ref is not None and s.map.view_ref is not None
        return DecideSpec(repo_root=s.repo_root, prompt=PromptInput(
            step=step,
            goal=None if s.goal_ref else s.goal,
            goal_ref=s.goal_ref,
            model=model,
            mode=s.steering.mode,
            max_iterations=self.req.max_iterations,
            max_output_tokens=self.req.max_output_tokens,
            map_ref=s.map.map_ref,
            view_ref=s.map.view_ref,
            spent_micros=s.ledger.spent_micros,
            max_micros=s.ledger.max_micros,
            recent=recent_decisions(s.log, self.req.prompt_recent_decisions),
            feedback=s.steering.feedback,
            notes=notes,
            summary_chars=self.profile.compression.summary_text_cap,
            stage=self.stages.prompt_lines(),
            tool_results=tool_result_lines(s.tool_results),
        ))

    async def _call_not_answered(self, step: int, outcome: CallOutcome) -> None:
        """A turn's model call was refused by the budget, stopped, or failed: log it and act."""
        s = self.state
        if outcome.status == "refused":
            self.log.write(step, "budget_refused", "", cost_micros=outcome.cost_micros, usage=outcome.usage,
                           attempts=outcome.attempts, error=outcome.error, step_taken=False)
            await self._out_of_budget(outcome.error or "the budget is exhausted")
            return
        if outcome.status == "stopped":
            if outcome.attempts:
                self.log.write(step, "stopped", "", cost_micros=outcome.cost_micros, usage=outcome.usage,
                               attempts=outcome.attempts, error="the model call was cancelled by a stop",
                               step_taken=False)
            self._stop(StopReason.STOPPED, f"{s.steering.stop_requested} (by {s.steering.stop_sender})")
            return
        self.log.write(step, "failed", "", cost_micros=outcome.cost_micros, usage=outcome.usage,
                       attempts=outcome.attempts, error=outcome.error)
        self._stop(StopReason.FAILED, outcome.error or "the model call failed")

    async def _apply(self, step: int, out: DecisionOut, outcome: CallOutcome) -> FlightPlan:
        """Apply one decision; returns the plan it proposed (for the guardrails)."""
        s, decision = self.state, out.decision
        paid = dict(cost_micros=outcome.cost_micros, usage=outcome.usage, attempts=outcome.attempts,
                    decision_ref=out.decision_ref)
        if decision.action == "call_tools" and decision.tool_calls:
            # tools first, map later: the results reach the next prompt only
            entry = self.log.write(step, decision.action, decision.reasoning,
                                   diff=[c.summary() for c in decision.tool_calls], **paid)
            s.tool_results = await self.tools.run(s.repo_root, step, decision.tool_calls)
            entry.error = "; ".join(f"{r.tool}: {r.error}" for r in s.tool_results if not r.ok) or None
            return s.map.flight_plan
        if decision.action == "finalize_context" and self.stages.more_stages():
            # finalizing a stage that is not the last one: the next stage starts
            s.stages.done = True
            self.log.write(step, decision.action, decision.reasoning, diff=["stage finished by the model"], **paid)
            return s.map.flight_plan
        if decision.action == "finalize_context":
            s.run.final_summary = shorten(decision.summary or decision.reasoning, _SUMMARY_CHARS)
            self.log.write(step, decision.action, decision.reasoning, **paid)
            self._stop(StopReason.FINALIZED, "the model finalized the context")
            return s.map.flight_plan
        if decision.action != "update_flight_plan" or decision.updates is None:
            self.log.write(step, "invalid", decision.reasoning, error=decision.error or "no usable update", **paid)
            return s.map.flight_plan
        try:
            proposed = s.map.flight_plan.apply(decision.updates)
        except (ValidationError, ValueError) as exc:
            self.log.write(step, "invalid", decision.reasoning, error=f"update rejected: {one_line(exc)}", **paid)
            return s.map.flight_plan
        pending = propose_turn(s, step, proposed)
        diff = update_diff_lines(decision.updates)
        # logged before rendering: a paid decision is never lost, even if the render fails
        entry = self.log.write(step, decision.action, decision.reasoning, diff=diff, **paid)
        entry.config_diff = decision.updates
        blocked = decision.updates.blocked_by(s.map.flight_plan)
        if blocked:
            entry.error = shorten("left out, pinned by the user: " + ", ".join(blocked), 500)
        await self._render(step, proposed, short_action_label(decision.action, diff), decision.updates)
        entry.map_tokens_after = s.map.metadata.tokens_used if s.map.metadata else 0
        if s.steering.mode is ExecutionMode.INTERACTIVE:
            await self._turn_verdict(entry, pending)
        return proposed

    async def _render(self, step: int, plan: FlightPlan, label: str, update: FlightPlanUpdate | None = None) -> None:
        """Render ``plan``; with ``update``, send only the update (``plan`` = stored plan + update)."""
        s = self.state
        s.run.status = Status.RENDERING
        self._count_activity()
        self._publish()
        by_update = update is not None and s.map.view_ref is not None
        out: RenderOutput = await self._on_host(
            "navigator.render_map",
            RenderMapInput(repo_root=s.repo_root, step=step, flight_plan=None if by_update else plan,
                        base_view_ref=s.map.view_ref if by_update else None, update=update if by_update else None),
            RenderOutput, SHORT, f"iter {step} · {shorten(label, 90)} · {format_usd(s.log.last_cost_micros)}")
        s.map.flight_plan = plan
        self._take_render(out)

    def _take_render(self, out: RenderOutput) -> None:
        m = self.state.map
        m.map_ref, m.view_ref, m.metadata = out.map_ref, out.view_ref, out.metadata

    # -- interactive -----------------------------------------------------

    async def _turn_verdict(self, entry: DecisionLogEntry, pending: PendingTurn) -> None:
        s = self.state
        verdict, timed_out = await self.gate.verdict(pending, f"turn {pending.turn}")
        entry.verdict, entry.feedback = verdict, pending.feedback
        if verdict == "approve":
            if pending.edited:
                await self._render(pending.turn, s.map.flight_plan, "edited plan")
                entry.diff_lines = plan_diff_lines(pending.previous_plan, s.map.flight_plan)
                entry.map_tokens_after = s.map.metadata.tokens_used if s.map.metadata else 0
            return
        restore_turn(s, pending)
        if verdict == "reject":
            s.steering.feedback = pending.feedback or "The user rejected the last proposal without feedback."
        elif timed_out:
            self._stop(StopReason.APPROVAL_TIMEOUT, f"no verdict for turn {pending.turn} in time")
        else:
            who = s.steering.stop_sender or pending.verdict_sender
            self._stop(StopReason.STOPPED, f"{s.steering.stop_requested or 'stopped'} (by {who})")

    async def _out_of_budget(self, message: str) -> None:
        """Autonomous: stop with ``budget_exhausted``. Interactive: park until the budget is raised."""
        detail = await self.gate.out_of_budget(lambda: self.state.ledger, message)
        if detail is not None:
            self._stop(StopReason.BUDGET_EXHAUSTED, detail)
        # else: raised; the loop re-prices the next call under the new limit

    # -- finalize --------------------------------------------------------

    async def _finalize(self) -> ExplorationResult:
        s = self.state
        s.run.status = Status.FINALIZING
        self._count_activity()
        self._publish()
        info = workflow.info()
        # the pack's map is re-rendered to fit --tokens: engine work, on the warm host
        written: WriteResultOutput = await self._on_host(
            "navigator.write_result",
            WriteResultInput(out_dir=self.req.out_dir, workflow_id=info.workflow_id, goal=s.goal,
                             repo_root=s.repo_root, map_ref=s.map.map_ref, report_json=self._report_json(),
                             summary=s.run.final_summary, stage_plan=self.stages.markdown(),
                             token_budget=self.req.token_budget, view_ref=s.map.view_ref),
            WriteResultOutput, RESULT,
            f"write result · {s.run.stop_reason.value if s.run.stop_reason else '?'} · {format_usd(s.ledger.spent_micros)}")
        s.run.status = Status.COMPLETED if s.run.stop_reason is not StopReason.FAILED else Status.FAILED
        self._publish()
        assert s.run.stop_reason is not None
        # never return while a message handler still runs (its effect would be lost)
        await workflow.wait_condition(workflow.all_handlers_finished)
        return ExplorationResult(
            workflow_id=info.workflow_id,
            stop_reason=s.run.stop_reason,
            stop_detail=s.run.stop_detail,
            iterations=s.run.iteration,
            decisions=s.log.logged,
            cost_micros=s.ledger.spent_micros,
            cost_usd=micros_to_usd(s.ledger.spent_micros),
            max_usd=micros_to_usd(s.ledger.max_micros),
            usage=s.ledger.total_usage(),
            model_attempts=s.ledger.attempts,
            map_metadata=s.map.metadata,
            context_path=written.context_path,
            report_path=written.report_path,
            context_ref=written.context_ref,
            report_ref=written.report_ref,
            pack=written.pack,
            map_ref=s.map.map_ref,
            continued_runs=s.run.continued_runs,
        )

    def _report_json(self) -> str:
        return json.dumps(report_dict(self.state, workflow.info().workflow_id), sort_keys=True)

    # -- bookkeeping -----------------------------------------------------

    def _stop(self, reason: StopReason, detail: str) -> None:
        if self.state.run.stop(reason, detail):
            workflow.logger.info("navigator stopping: %s (%s)", reason.value, detail)

    def _room(self) -> bool:
        return self.state.run.activities_used < self.profile.safety.max_activities

    def _details(self) -> str:
        return turn_report_markdown(build_turn_report(self.state), self.state.goal)

    # -- messages --------------------------------------------------------

    def _turn_report(self) -> TurnReport:
        return build_turn_report(self.state)

    @workflow.query(name="get_flight_plan")
    def get_flight_plan(self) -> FlightPlan:
        """The current (or proposed, while awaiting approval) flight plan."""
        return self.state.map.flight_plan

    @workflow.query(name="flight_plan")
    def flight_plan_alias(self) -> FlightPlan:
        """Alias of ``get_flight_plan``."""
        return self.get_flight_plan()

    @workflow.update(name="edit_flight_plan")
    def edit_flight_plan(self, inp: EditFlightPlanInput) -> FlightPlan:
        """Amend the proposed plan of the pending turn; returns the plan now proposed."""
        return apply_edit(self.state, inp)

    @edit_flight_plan.validator
    def _validate_edit(self, inp: EditFlightPlanInput) -> None:
        edited_plan(self.state.steering, inp)


def _guard_detail(reason: str, repeats: int) -> str:
    """The stop detail of a guardrail stop, for the report and the Web UI."""
    if reason == "loop_detected":
        return f"the same flight plan, the same tool call or a near-identical decision came {repeats} times"
    if reason == "activity_cap":
        return "the run reached its profile's hard cap on activities"
    if reason == "stalled":
        return "too many iterations without a better map"
    return reason

