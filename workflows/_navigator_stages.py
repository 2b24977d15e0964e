"""Planning phase and stages of ``NavigatorWorkflow`` (deterministic workflow code).

After the scan, ``planning.analyze`` → (``planning.review`` when the analysis
asks to reflect and review is on) → ``planning.plan`` produce a
:class:`~navcore.planning.StagePlan` (DIRECT goals and ``planning="direct"``
get one implicit stage). Iterations then run stage by stage under a
per-stage cap; when a stage ends (the model finalizes it or the cap hits)
``stages.check_criteria`` and ``stages.reflect`` run, may rewrite the
remaining stages, and are logged. Every call is priced in the ledger
(reserve an upper bound → reconcile with the real usage), like ``decide``.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any, TypeVar

from pydantic import BaseModel
from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from durable_navigator.navcore.errors import BudgetError
    from durable_navigator.navcore.planning import (
        AnalyzeInput,
        AnalyzeResult,
        CriteriaInput,
        CriteriaResult,
        PlanInput,
        PlanningConfig,
        PlanResult,
        ReflectInput,
        ReflectResult,
        ReviewInput,
        ReviewResult,
        Stage,
        StagePlan,
        apply_reflection,
        criteria_log_fields,
        direct_plan,
        plan_markdown,
        reflection_log_fields,
    )
    from durable_navigator.navcore.pricing import cost_micro_usd, estimate_micro_usd
    from durable_navigator.navcore.report import shorten
    from durable_navigator.navcore.state import DecisionLogEntry, ExecutionMode, NavigatorState, PendingTurn, Status, StopReason

__all__ = ["StagesMixin", "PLANNING_TIMEOUT"]

R = TypeVar("R", bound=BaseModel)

#: one planning / stage call (a model call plus a render for the map excerpt)
PLANNING_TIMEOUT = timedelta(minutes=5)
#: transient provider failures retry a few times; parse/model/budget errors never do
_PLANNING_RETRY = RetryPolicy(
    maximum_attempts=3, non_retryable_error_types=["NavigatorError", "ModelError", "PlanParseError", "BudgetError", "ConfigError"]
)
#: plan verdicts name kind "plan" (before: they shared turn number 1 with the first map turn)
_PLAN_VERDICT_KIND_PATCH = "plan-verdict-kind"
#: a failed planning call falls back to one direct stage (before: it ended the run)
_PLANNING_FALLBACK_PATCH = "planning-failure-fallback"
#: a direct stage spans the whole run (before: it ended at the profile's per-stage cap)
_DIRECT_WHOLE_RUN_PATCH = "direct-stage-whole-run"
#: prompt tokens reserved on top of the map excerpt (instructions, goal, analysis, review)
_PROMPT_OVERHEAD_TOKENS = 4000


class PlanningFailed(Exception):
    """A planning/stage call was refused by the budget or failed (already logged)."""

    def __init__(self, name: str, reason: str, stop: StopReason) -> None:
        super().__init__(f"{name}: {reason}")
        self.name, self.reason, self.stop = name, reason, stop


class StagesMixin:
    """Planning and stage orchestration; mixed into ``NavigatorWorkflow``."""

    state: NavigatorState
    req: Any
    profile: Any

    # provided by NavigatorWorkflow
    def _stop(self, reason: StopReason, detail: str) -> None: ...  # pragma: no cover
    def _publish(self) -> None: ...  # pragma: no cover

    # -- planning phase --------------------------------------------------

    def _planning_config(self) -> PlanningConfig:
        cfg: PlanningConfig = self.profile.planning
        review = cfg.review or self.req.review
        return cfg if review == cfg.review else cfg.model_copy(update={"review": review})

    async def _plan_phase(self) -> None:
        """Produce the stage plan (logged); a failed planning call falls back to one direct stage."""
        try:
            await self._plan_stages()
        except PlanningFailed as failed:
            if not workflow.patched(_PLANNING_FALLBACK_PATCH):
                self._stop(failed.stop, f"{failed.name} failed: {failed.reason}")
                return
            self._fall_back(failed)

    def _fall_back(self, failed: PlanningFailed) -> None:
        """Log why planning failed and go on with one direct stage (visible in status and report)."""
        s = self.state
        why = shorten(f"{failed.name} failed ({failed.reason}); the run goes on with one direct stage", 590)
        workflow.logger.warning("planning fallback: %s", why)
        plan = self._direct_plan().model_copy(update={"fallback": why})
        self._set_plan(plan, f"planning fallback: {why}")
        s.decision_log[-1].error = f"planning fallback: {shorten(failed.reason, 400)}"

    async def _plan_stages(self) -> None:
        """analyze → (review) → plan → (interactive approval); raises :class:`PlanningFailed`."""
        s, cfg = self.state, self._planning_config()
        if self.req.planning == "direct":
            self._set_plan(self._direct_plan(), "planning direct: one direct stage")
            return
        common = dict(goal=s.goal, model=s.model, repo_root=s.repo_root, config=cfg)
        analyzed = await self._priced(
            "planning.analyze", AnalyzeInput(**common, map_metadata=s.map_metadata), AnalyzeResult, "analyze"
        )
        analysis = analyzed.analysis
        self._log_fields("planning_analysis", f"{'DIRECT' if analysis.direct else 'plan'}: {analysis.analysis}",
                         [f"reflect: {'yes' if analysis.reflect else 'no'}"], analyzed)
        if analysis.direct:
            self._set_plan(self._direct_plan(), "the analysis found the goal DIRECT")
            return
        review = None
        if analysis.reflect and cfg.review:
            reviewed = await self._priced(
                "planning.review",
                ReviewInput(**common, analysis=analysis, map_metadata=s.map_metadata),
                ReviewResult,
                "review (critic · pragmatist · detailer)",
            )
            review = reviewed.review
            self._log_fields("planning_review", f"critic: {review.critic}",
                             [shorten(a, 300) for a in review.adjustments[:8]], reviewed)
        planned = await self._priced(
            "planning.plan",
            PlanInput(**common, analysis=analysis, review=review, map_metadata=s.map_metadata,
                      flight_plan=s.flight_plan),
            PlanResult,
            "plan",
        )
        self._set_plan(planned.plan, f"{len(planned.plan.stages)} stages planned", planned)
        if s.mode is ExecutionMode.INTERACTIVE:
            await self._approve_plan(PlanInput(**common, analysis=analysis, review=review,
                                               map_metadata=s.map_metadata, flight_plan=s.flight_plan))

    async def _approve_plan(self, replan: PlanInput) -> None:
        """Interactive: the plan is approved like a turn; a rejection re-plans once with the feedback."""
        s, cfg = self.state, self._planning_config()
        for attempt in (1, 2):
            verdict, feedback = await self._plan_verdict(attempt)
            s.decision_log[-1].verdict, s.decision_log[-1].feedback = verdict, feedback
            if verdict == "approve":
                return
            if verdict == "stop":
                self._stop(StopReason.STOPPED, f"{s.stop_requested or 'the plan was stopped'} (by {s.stop_sender or 'user'})")
                return
            if attempt == 2:
                self._set_plan(self._direct_plan(), "the re-plan was rejected too: one direct stage")
                return
            note = f"\nUSER FEEDBACK ON THE PREVIOUS PLAN (revise it): {feedback or 'rejected without feedback'}"
            analysis = replan.analysis.model_copy(update={"analysis": (replan.analysis.analysis + note)[-20_000:]})
            planned = await self._priced("planning.plan", replan.model_copy(update={"analysis": analysis}),
                                         PlanResult, "re-plan with feedback")
            self._set_plan(planned.plan, f"re-planned after the user's feedback: {shorten(feedback or '', 300)}",
                           planned)

    async def _plan_verdict(self, round_: int) -> tuple[str, str | None]:
        """Wait for approve / reject / stop of the stage plan (pending kind "plan", turn = round)."""
        s = self.state
        if workflow.patched(_PLAN_VERDICT_KIND_PATCH):
            pending = PendingTurn(turn=round_, kind="plan", previous_plan=s.flight_plan,
                                  proposed_plan=s.flight_plan)
        else:  # histories from before plan verdicts had their own kind: turn iteration + 1
            pending = PendingTurn(turn=s.iteration + 1, previous_plan=s.flight_plan, proposed_plan=s.flight_plan)
        s.pending, s.status = pending, Status.AWAITING_APPROVAL
        self._publish()
        try:
            await workflow.wait_condition(
                lambda: pending.verdict is not None or s.stop_requested is not None
                or s.mode is ExecutionMode.AUTONOMOUS,
                timeout=timedelta(seconds=self.req.approval.timeout_s),
                timeout_summary="approval of the stage plan",
            )
        except asyncio.TimeoutError:
            pending.verdict = self.req.approval.default_verdict
        s.pending, s.status = None, Status.THINKING
        verdict = pending.verdict or ("stop" if s.stop_requested is not None else "approve")
        return verdict, pending.feedback

    def _set_plan(self, plan: StagePlan, why: str, result: Any = None) -> None:
        s = self.state
        s.stage_plan, s.stage_index, s.stage_iterations, s.stage_done = plan, 0, 0, False
        lines = [shorten(f"stage {i + 1}: {st.objective}", 300) for i, st in enumerate(plan.stages)]
        self._log_fields("stage_plan", why, lines, result)

    # -- stages ----------------------------------------------------------

    def _stage(self) -> Stage | None:
        s = self.state
        if s.stage_plan is None or s.stage_index >= len(s.stage_plan.stages):
            return None
        return s.stage_plan.stages[s.stage_index]

    def _more_stages(self) -> bool:
        s = self.state
        return s.stage_plan is not None and s.stage_index + 1 < len(s.stage_plan.stages)

    def _stage_cap(self, stage: Stage) -> int:
        plan = self.state.stage_plan
        if plan is not None and plan.whole_run:
            return stage.max_iterations  # the run's own cap (max_iterations, guardrails) ends it
        return min(stage.max_iterations, self.profile.safety.max_stage_iterations)

    def _direct_plan(self) -> StagePlan:
        """One direct stage; since the patch it spans the whole run (not the per-stage cap)."""
        s, cfg = self.state, self._planning_config()
        if workflow.patched(_DIRECT_WHOLE_RUN_PATCH):
            return direct_plan(s.goal, cfg, run_iterations=self.req.max_iterations)
        return direct_plan(s.goal, cfg)

    def _stage_lines(self) -> list[str]:
        """The prompt's "Current stage" section: objective, budget, criteria."""
        s, stage = self.state, self._stage()
        if stage is None or s.stage_plan is None:
            return []
        total = len(s.stage_plan.stages)
        lines = [
            f"Stage {s.stage_index + 1} of {total}: {stage.objective}",
            f"Iteration {s.stage_iterations + 1} of at most {self._stage_cap(stage)} in this stage.",
            "Success criteria:",
            *(f"- {c}" for c in stage.success_criteria),
        ]
        if s.stage_index + 1 < total:
            lines.append("Call finalize_context when these criteria are met: the next stage starts then.")
        return lines

    async def _after_stage_step(self) -> None:
        """Count the decision; at a stage's end check its criteria, reflect, advance."""
        s, stage = self.state, self._stage()
        if stage is None or s.stage_plan is None:
            return
        s.stage_iterations += 1
        finalized = s.stop_reason is StopReason.FINALIZED
        if not (s.stage_done or finalized or s.stage_iterations >= self._stage_cap(stage)):
            return
        cfg, index = self._planning_config(), s.stage_index
        common = dict(goal=s.goal, model=s.model, repo_root=s.repo_root, config=cfg)
        try:
            checked = await self._priced(
                "stages.check_criteria",
                CriteriaInput(**common, stage_index=index, stage=stage, flight_plan=s.flight_plan,
                              map_metadata=s.map_metadata),
                CriteriaResult,
                f"stage {index + 1} criteria",
            )
            s.criteria = [c for c in s.criteria if c.stage_index != index] + [checked.check]
            self._log_fields(result=checked, **criteria_log_fields(checked.check, stage))  # type: ignore[arg-type]
            if finalized and not self._more_stages():
                return  # the model finalized the last stage: the criteria status goes into the pack
            if self._more_stages() or not checked.check.all_met:
                reflected = await self._priced(
                    "stages.reflect",
                    ReflectInput(**common, plan=s.stage_plan, completed_index=index, check=checked.check,
                                 map_metadata=s.map_metadata),
                    ReflectResult,
                    f"stage {index + 1} reflect",
                )
                s.stage_plan = apply_reflection(s.stage_plan, index, reflected.reflection, cfg)
                self._log_fields(result=reflected, **reflection_log_fields(reflected.reflection, index))  # type: ignore[arg-type]
        except PlanningFailed as failed:
            if not workflow.patched(_PLANNING_FALLBACK_PATCH):
                self._stop(failed.stop, f"{failed.name} failed: {failed.reason}")
                return
            # logged by _priced; the plan goes on unchanged (the failed entry says why)
            workflow.logger.warning("stage %d: %s failed, the plan goes on: %s", index + 1, failed.name,
                                    failed.reason)
        if self._more_stages():
            s.stage_index, s.stage_iterations, s.stage_done = index + 1, 0, False
        elif not finalized:
            self._stop(StopReason.FINALIZED, f"all {len(s.stage_plan.stages)} stages of the plan ran")
        self._publish()

    def _stage_plan_markdown(self) -> str | None:
        s = self.state
        if s.stage_plan is None:
            return None
        return plan_markdown(s.stage_plan, {c.stage_index: c for c in s.criteria}, None)

    # -- priced calls and logging ---------------------------------------

    async def _priced(self, name: str, inp: BaseModel, result_type: type[R], label: str) -> R:
        """Run one planning/stage activity under a ledger reservation; log and raise on failure.

        The caller decides what a failure means (:class:`PlanningFailed`): the
        planning phase falls back to one direct stage, a stage end goes on
        without the check or reflection.
        """
        s, cfg = self.state, self._planning_config()
        tokens = cfg.map_excerpt_chars // 3 + _PROMPT_OVERHEAD_TOKENS
        estimate = estimate_micro_usd(tokens, cfg.max_output_tokens, s.model_rates) if s.model_rates else 0
        try:
            reservation = s.ledger.reserve(s.model, estimate, s.iteration)
        except BudgetError as exc:
            self._log_fields(name, "", [], None, error=str(exc))
            raise PlanningFailed(name, str(exc), StopReason.BUDGET_EXHAUSTED) from exc
        s.activities_used += 1
        try:
            res = await workflow.execute_activity(
                name, inp, result_type=result_type, start_to_close_timeout=PLANNING_TIMEOUT,
                retry_policy=_PLANNING_RETRY,
                summary=f"iter {s.iteration} · {label}",
            )
        except ActivityError as err:
            s.ledger.release(reservation)
            message = " ".join(str(err.cause or err).split())[:500]
            self._log_fields(name, "", [], None, error=message)
            raise PlanningFailed(name, message, StopReason.FAILED) from err
        usage, calls = res.usage, max(res.calls, 1)  # type: ignore[attr-defined]
        cost = cost_micro_usd(usage, s.model_rates, calls=calls) if s.model_rates and usage.input_tokens else 0
        s.ledger.reconcile(reservation, usage, cost, calls, 1)
        self._planning_cost = cost
        return res

    def _log_fields(
        self, action: str, reasoning: str, diff_lines: list[str], result: Any = None, *, error: str | None = None
    ) -> None:
        s = self.state
        usage = getattr(result, "usage", None)
        tokens = s.map_metadata.tokens_used if s.map_metadata else 0
        s.decision_log.append(
            DecisionLogEntry(
                step=s.iteration,
                action=action,
                reasoning=shorten(reasoning, 1200),
                diff_lines=diff_lines,
                cost_micros=getattr(self, "_planning_cost", 0) if usage else 0,
                input_tokens=usage.input_tokens if usage else 0,
                output_tokens=usage.output_tokens if usage else 0,
                map_tokens_before=tokens,
                map_tokens_after=tokens,
                at=workflow.now(),
                error=error,
            )
        )
        self._publish()
