"""The planning phase and stage progress (deterministic workflow code).

After the scan: analyze → (review, when the analysis asks to reflect and
review is on) → plan produce a :class:`~navcore.planning.planning.StagePlan`; a DIRECT
goal or ``planning="direct"`` gets one stage spanning the whole run. In
interactive mode the plan waits for a verdict like a turn; a rejection
re-plans once with the feedback. Iterations then run stage by stage under a
per-stage cap; when a stage ends (the model finalizes it or the cap hits) its
criteria are checked and a reflection may rewrite the remaining stages. Every
call is a priced model call (:mod:`.model_call`) and is logged with its cost;
a failed planning call falls back to one direct stage, a failed check or
reflection leaves the plan as it is — both logged, never silent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from durable_navigator.navcore.navigator.model_calls import (
        AnalysisOut,
        AnalyzeSpec,
        CheckOut,
        CriteriaSpec,
        PlanOut,
        PlanSpec,
        PromptSpec,
        ReflectionOut,
        ReflectSpec,
        ReviewOut,
        ReviewSpec,
    )
    from durable_navigator.navcore.planning.planning import (
        PlanningConfig,
        Stage,
        StagePlan,
        apply_reflection,
        criteria_log_fields,
        direct_plan,
        plan_markdown,
        reflection_log_fields,
    )
    from durable_navigator.navcore.navigator.report import shorten
    from durable_navigator.navcore.navigator.state import ExecutionMode, NavigatorState, PendingTurn, Status, StopReason
    from durable_navigator.workflows.blocks.approval import ApprovalGate
    from durable_navigator.workflows.blocks.decision_log import DecisionLogWriter
    from durable_navigator.workflows.blocks.model_call import CallOutcome, ModelCaller

__all__ = ["StageRunner", "StageSettings", "PlanningFailed"]

_STOP_OF = {"refused": StopReason.BUDGET_EXHAUSTED, "stopped": StopReason.STOPPED, "failed": StopReason.FAILED}


class PlanningFailed(Exception):
    """A planning/stage call was refused by the budget, stopped or failed (already logged)."""

    def __init__(self, name: str, reason: str, stop: StopReason) -> None:
        super().__init__(f"{name}: {reason}")
        self.name, self.reason, self.stop = name, reason, stop


@dataclass(frozen=True)
class StageSettings:
    """What the run asked of its planning phase."""

    config: PlanningConfig
    #: "auto" | "direct" (planning "off" never builds a runner)
    planning: str
    max_iterations: int
    max_stage_iterations: int


class StageRunner:
    """Plans the stages of a navigator run and moves through them."""

    def __init__(self, state: Callable[[], NavigatorState], caller: ModelCaller, log: DecisionLogWriter,
                 gate: ApprovalGate, settings: StageSettings, stop: Callable[[StopReason, str], None],
                 publish: Callable[[], None], model_for: Callable[[str], str] | None = None) -> None:
        """``model_for(kind)``: the model of a call of that kind (budget-aware routing; default the run's)."""
        self._state, self.caller, self.log, self.gate = state, caller, log, gate
        self.settings = settings
        self._stop, self._publish = stop, publish
        self._model_for = model_for or (lambda kind: self._state().model)

    # -- planning phase --------------------------------------------------

    async def plan_phase(self) -> None:
        """Produce the stage plan (logged); a failed planning call falls back to one direct stage."""
        try:
            await self._plan_stages()
        except PlanningFailed as failed:
            if failed.stop is StopReason.STOPPED:
                self._stop(StopReason.STOPPED, f"stopped during {failed.name}")
                return
            self._fall_back(failed)

    def _fall_back(self, failed: PlanningFailed) -> None:
        """Say why planning failed and go on with one direct stage (visible in status and report)."""
        why = shorten(f"{failed.name} failed ({failed.reason}); the run goes on with one direct stage", 590)
        workflow.logger.warning("planning fallback: %s", why)
        self._set_plan(self._direct_plan().model_copy(update={"fallback": why}), f"planning fallback: {why}")
        self._state().log.entries[-1].error = f"planning fallback: {shorten(failed.reason, 400)}"

    def _common(self) -> dict:
        s, cfg = self._state(), self.settings.config
        assert s.goal_ref is not None, "scan stores the goal first"
        return dict(model=s.model, repo_root=s.repo_root, goal_ref=s.goal_ref,
                    max_output_tokens=cfg.max_output_tokens, config=cfg)

    async def _plan_stages(self) -> None:
        """analyze → (review) → plan → (interactive approval); raises :class:`PlanningFailed`."""
        s, cfg = self._state(), self.settings.config
        if self.settings.planning == "direct":
            self._set_plan(self._direct_plan(), "planning direct: one direct stage")
            return
        analyzed, cost = await self._priced(AnalyzeSpec(**self._common(), map_metadata=s.map.metadata), "analyze")
        assert isinstance(analyzed, AnalysisOut)
        analysis = analyzed.analysis
        self._log_call(cost, "planning_analysis", f"{'DIRECT' if analysis.direct else 'plan'}: {analysis.analysis}",
                       [f"reflect: {'yes' if analysis.reflect else 'no'}"])
        if analysis.direct:
            self._set_plan(self._direct_plan(), "the analysis found the goal DIRECT")
            return
        review = None
        if analysis.reflect and cfg.review:
            reviewed, cost = await self._priced(
                ReviewSpec(**self._common(), analysis=analysis, map_metadata=s.map.metadata),
                "review (critic · pragmatist · detailer)")
            assert isinstance(reviewed, ReviewOut)
            review = reviewed.review
            self._log_call(cost, "planning_review", f"critic: {review.critic}",
                           [shorten(a, 300) for a in review.adjustments[:8]])
        spec = PlanSpec(**self._common(), analysis=analysis, review=review, map_metadata=s.map.metadata)
        planned, cost = await self._priced(spec, "plan")
        assert isinstance(planned, PlanOut)
        self._set_plan(planned.plan, f"{len(planned.plan.stages)} stages planned", cost)
        if s.steering.mode is ExecutionMode.INTERACTIVE:
            await self._approve_plan(spec)

    async def _approve_plan(self, spec: PlanSpec) -> None:
        """Interactive: the plan is approved like a turn; a rejection re-plans once with the feedback."""
        s = self._state()
        for round_ in (1, 2):
            pending = PendingTurn(turn=round_, kind="plan", previous_plan=s.map.flight_plan,
                                  proposed_plan=s.map.flight_plan)
            verdict, _ = await self.gate.verdict(pending, "the stage plan")
            s.run.status = Status.THINKING
            s.log.entries[-1].verdict, s.log.entries[-1].feedback = verdict, pending.feedback
            if verdict == "approve":
                return
            if verdict == "stop":
                who = s.steering.stop_sender or pending.verdict_sender or "user"
                self._stop(StopReason.STOPPED, f"{s.steering.stop_requested or 'the plan was stopped'} (by {who})")
                return
            if round_ == 2:
                self._set_plan(self._direct_plan(), "the re-plan was rejected too: one direct stage")
                return
            note = f"\nUSER FEEDBACK ON THE PREVIOUS PLAN (revise it): {pending.feedback or 'rejected without feedback'}"
            analysis = spec.analysis.model_copy(update={"analysis": (spec.analysis.analysis + note)[-20_000:]})
            planned, cost = await self._priced(spec.model_copy(update={"analysis": analysis}), "re-plan with feedback")
            assert isinstance(planned, PlanOut)
            self._set_plan(planned.plan, f"re-planned after the user's feedback: {shorten(pending.feedback or '', 300)}",
                           cost)

    def _set_plan(self, plan: StagePlan, why: str, cost: CallOutcome | None = None) -> None:
        st = self._state().stages
        st.plan, st.index, st.iterations, st.done = plan, 0, 0, False
        lines = [shorten(f"stage {i + 1}: {stage.objective}", 300) for i, stage in enumerate(plan.stages)]
        self._log_call(cost, "stage_plan", why, lines)

    # -- stages ----------------------------------------------------------

    def current(self) -> Stage | None:
        """The stage being worked on (None without a plan or past its end)."""
        st = self._state().stages
        if st.plan is None or st.index >= len(st.plan.stages):
            return None
        return st.plan.stages[st.index]

    def more_stages(self) -> bool:
        """True when a stage follows the current one."""
        st = self._state().stages
        return st.plan is not None and st.index + 1 < len(st.plan.stages)

    def _cap(self, stage: Stage) -> int:
        plan = self._state().stages.plan
        if plan is not None and plan.whole_run:
            return stage.max_iterations  # the run's own cap (max_iterations, guardrails) ends it
        return min(stage.max_iterations, self.settings.max_stage_iterations)

    def _direct_plan(self) -> StagePlan:
        """One direct stage spanning the whole run."""
        return direct_plan(self._state().goal, self.settings.config, run_iterations=self.settings.max_iterations)

    def prompt_lines(self) -> list[str]:
        """The prompt's "Current stage" section: objective, budget, criteria."""
        st, stage = self._state().stages, self.current()
        if stage is None or st.plan is None:
            return []
        total = len(st.plan.stages)
        lines = [
            f"Stage {st.index + 1} of {total}: {stage.objective}",
            f"Iteration {st.iterations + 1} of at most {self._cap(stage)} in this stage.",
            "Success criteria:",
            *(f"- {c}" for c in stage.success_criteria),
        ]
        if st.index + 1 < total:
            lines.append("Call finalize_context when these criteria are met: the next stage starts then.")
        return lines

    async def after_step(self) -> None:
        """Count the decision; at a stage's end check its criteria, reflect, advance."""
        s, stage = self._state(), self.current()
        st = s.stages
        if stage is None or st.plan is None:
            return
        st.iterations += 1
        finalized = s.run.stop_reason is StopReason.FINALIZED
        if not (st.done or finalized or st.iterations >= self._cap(stage)):
            return
        index = st.index
        try:
            checked, cost = await self._priced(
                CriteriaSpec(**self._common(), stage_index=index, stage=stage, flight_plan=s.map.flight_plan,
                             map_metadata=s.map.metadata),
                f"stage {index + 1} criteria")
            assert isinstance(checked, CheckOut)
            st.criteria = [c for c in st.criteria if c.stage_index != index] + [checked.check]
            self._log_call(cost, **criteria_log_fields(checked.check, stage))
            if not (finalized and not self.more_stages()) and (self.more_stages() or not checked.check.all_met):
                reflected, cost = await self._priced(
                    ReflectSpec(**self._common(), plan=st.plan, completed_index=index, check=checked.check),
                    f"stage {index + 1} reflect")
                assert isinstance(reflected, ReflectionOut)
                st.plan = apply_reflection(st.plan, index, reflected.reflection, self.settings.config)
                self._log_call(cost, **reflection_log_fields(reflected.reflection, index))
        except PlanningFailed as failed:
            # logged by _priced; the plan goes on unchanged (the failed entry says why)
            workflow.logger.warning("stage %d: %s failed, the plan goes on: %s", index + 1, failed.name, failed.reason)
            if failed.stop is StopReason.STOPPED:
                return
        if finalized and not self.more_stages():
            return  # the model finalized the last stage: the criteria status goes into the pack
        if self.more_stages():
            st.index, st.iterations, st.done = index + 1, 0, False
        elif not finalized:
            self._stop(StopReason.FINALIZED, f"all {len(st.plan.stages)} stages of the plan ran")
        self._publish()

    def markdown(self) -> str | None:
        """The stage plan with each criterion's status (for the result)."""
        st = self._state().stages
        if st.plan is None:
            return None
        return plan_markdown(st.plan, {c.stage_index: c for c in st.criteria}, None)

    # -- priced calls and logging ---------------------------------------

    async def _priced(self, spec: PromptSpec, label: str) -> tuple[object, CallOutcome]:
        """One planning/stage model call; logs and raises :class:`PlanningFailed` unless it answered."""
        s = self._state()
        model = self._model_for(spec.kind)  # asked right before the call: routing sees the spending as it is now
        spec = spec.model_copy(update={"model": model})
        outcome = await self.caller.call(model, spec, step=s.run.iteration, label=f"iter {s.run.iteration} · {label}")
        if outcome.status == "ok" and outcome.result is not None:
            return outcome.result, outcome
        reason = outcome.error or outcome.status
        self.log.write(s.run.iteration, spec.kind, "", cost_micros=outcome.cost_micros, usage=outcome.usage,
                       attempts=outcome.attempts, error=reason, step_taken=False)
        raise PlanningFailed(spec.kind, reason, _STOP_OF.get(outcome.status, StopReason.FAILED))

    def _log_call(self, cost: CallOutcome | None, action: str, reasoning: str, diff_lines: list[str]) -> None:
        s = self._state()
        self.log.write(s.run.iteration, action, reasoning, diff=diff_lines,
                       cost_micros=cost.cost_micros if cost else 0, usage=cost.usage if cost else None,
                       attempts=cost.attempts if cost else 0, step_taken=False)
