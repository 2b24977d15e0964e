"""``NavigatorWorkflow``: one durable, budgeted, inspectable exploration.

Loop: scan → per iteration: build prompt (stored as an artifact, exact token
count) → reserve the estimated cost (refused past the budget) → decide →
reconcile the ledger with the usage of every attempt → apply the update
(validated deep merge; an invalid one is logged, not fatal) → render → log →
in interactive mode wait for a verdict → … until the model finalizes or a stop
reason applies; every stop still writes the best map so far.

Only references to maps and prompts enter history. The workflow continues as
new when the server suggests it or at ``continue_as_new_events``, carrying its
whole state, after every message handler has finished.
"""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any

from pydantic import ValidationError
from temporalio import workflow
from temporalio.common import RetryPolicy, SearchAttributeKey
from temporalio.exceptions import ActivityError, ApplicationError, TimeoutError

from durable_navigator.workflows._navigator_stages import StagesMixin
from durable_navigator.workflows._navigator_tools import ToolsMixin, tool_result_lines

with workflow.unsafe.imports_passed_through():
    from durable_navigator.navcore.activity_io import (
        AttemptUsage,
        DecideInput,
        DecideOutput,
        PromptInput,
        PromptOutput,
        RecentDecision,
        RenderInput,
        RenderOutput,
        ScanInput,
        ScanOutput,
        WriteResultInput,
        WriteResultOutput,
    )
    from durable_navigator.navcore.budget import format_usd, micros_to_usd, usd_to_micros
    from durable_navigator.navcore.compression import (
        CompressInput,
        CompressResult,
        SummaryRequest,
        build_summary_request,
        enforce_hard_cap,
        merge_summary,
        needs_compression,
        truncate_entries,
    )
    from durable_navigator.navcore.pricing import cost_micro_usd, estimate_micro_usd
    from durable_navigator.navcore.errors import BudgetError
    from durable_navigator.navcore.flightplan import FlightPlan, FlightPlanUpdate
    from durable_navigator.navcore.guardrails import RunProgress, check_guardrails, observe, record_iteration
    from durable_navigator.navcore.prompt import GOAL_SLOT
    from durable_navigator.navcore.messages import (
        ApproveInput,
        EditFlightPlanInput,
        RaiseBudgetInput,
        RejectInput,
        SetModeInput,
        StopInput,
    )
    from durable_navigator.navcore.report import (
        DecisionLogView,
        TurnReport,
        build_turn_report,
        plan_diff_lines,
        short_action_label,
        shorten,
        turn_report_markdown,
        update_diff_lines,
    )
    from durable_navigator.navcore.requests import ExplorationRequest, ExplorationResult
    from durable_navigator.navcore.turns import (
        apply_edit,
        edited_plan,
        initial_state,
        propose_turn,
        record_verdict,
        recent_decisions,
        report_dict,
        request_stop,
        restore_turn,
    )
    from durable_navigator.navcore.state import (
        DecisionLogEntry,
        ExecutionMode,
        NavigatorState,
        Status,
        StopReason,
        Verdict,
    )

__all__ = [
    "NavigatorWorkflow",
    "SA_REPO",
    "SA_STATUS",
    "SA_COST_USD",
    "SA_ITERATION",
    "NAVIGATOR_SEARCH_ATTRIBUTES",
]

SA_REPO = SearchAttributeKey.for_keyword("NavigatorRepo")
SA_STATUS = SearchAttributeKey.for_keyword("NavigatorStatus")
SA_COST_USD = SearchAttributeKey.for_float("NavigatorCostUsd")
SA_ITERATION = SearchAttributeKey.for_int("NavigatorIteration")
#: register these on the server (dev server ``search_attributes=``) before starting runs
NAVIGATOR_SEARCH_ATTRIBUTES = [SA_REPO, SA_STATUS, SA_COST_USD, SA_ITERATION]

#: short activities: repo-map, prompt and result writing (retry transient I/O failures)
_SHORT_RETRY = RetryPolicy(maximum_attempts=3, non_retryable_error_types=["NavigatorError"])
_SHORT_TIMEOUT = timedelta(minutes=2)
#: indexing a large repository on a cold cache takes a while
_SCAN_TIMEOUT = timedelta(minutes=15)
#: those activities heartbeat every few seconds: a killed worker is noticed fast
_WORK_HEARTBEAT = timedelta(seconds=30)
#: statuses shown in the Web UI details but not upserted as search attributes
_TRANSIENT = frozenset({Status.THINKING, Status.RENDERING})
#: final summary kept in state (the full one is in the decision artifact)
_SUMMARY_CHARS = 2000
#: tool turns are observed by their calls, not by the (unchanged) flight plan
_TOOL_TURN_LOOP_PATCH = "tool-turn-loop-fingerprint"
#: reasoning kept per decision-log entry (full text in the decision artifact)
_LOG_REASONING_CHARS = 1200


@workflow.defn(name="NavigatorWorkflow")
class NavigatorWorkflow(StagesMixin, ToolsMixin):
    """A durable exploration of one repository for one goal."""

    @workflow.init
    def __init__(self, req: ExplorationRequest) -> None:
        self.req = req
        self.state: NavigatorState = initial_state(req)
        self.profile = req.run_profile()
        self._published: tuple[Any, ...] = ()

    # -- run -------------------------------------------------------------

    @workflow.run
    async def run(self, req: ExplorationRequest) -> ExplorationResult:
        """Explore until a stop reason applies, then write the result."""
        s = self.state
        if s.map_ref is None:
            # the goal in the memo makes runs findable in the Web UI even without the CLI's memo
            workflow.upsert_memo({"goal": shorten(s.goal, 2000), "repo": s.repo_root, "model": s.model})
            await self._scan()
            if self.req.planning != "off" and s.stop_reason is None:
                await self._plan_phase()
        while s.stop_reason is None:
            try:
                await self._iteration()
            except ActivityError as err:
                # prompt/render failures end the run, but the best map so far is still written
                self._stop(StopReason.FAILED, _cause_message(err))
            if s.stop_reason is None and self._should_continue_as_new():
                await workflow.wait_condition(workflow.all_handlers_finished)
                s.continued_runs += 1
                workflow.logger.info("continuing as new after step %d", s.iteration)
                workflow.continue_as_new(req.model_copy(update={"carried_state": s}))
        return await self._finalize()

    async def _scan(self) -> None:
        s = self.state
        s.status = Status.SCANNING
        s.activities_used += 1
        self._publish()
        try:
            out: ScanOutput = await workflow.execute_activity(
                "navigator.scan",
                ScanInput(repo_root=s.repo_root, flight_plan=s.flight_plan, model=s.model, goal=s.goal),
                result_type=ScanOutput,
                start_to_close_timeout=_SCAN_TIMEOUT,
                heartbeat_timeout=_WORK_HEARTBEAT,
                retry_policy=_SHORT_RETRY,
                summary=f"scan {shorten(s.repo_root, 80)} · {s.model}",
            )
        except ActivityError as err:
            s.status, s.stop_reason = Status.FAILED, StopReason.FAILED
            s.stop_detail = _cause_message(err)
            self._publish()
            raise ApplicationError(f"scan failed: {s.stop_detail}", type="ScanFailed", non_retryable=True) from err
        s.repo_root, s.index_version, s.goal_ref = out.repo_root, out.index_version, out.goal_ref
        s.model_rates = out.rates
        self._take_render(out.render)

    def _should_continue_as_new(self) -> bool:
        info = workflow.info()
        return info.is_continue_as_new_suggested() or (
            info.get_current_history_length() >= self.req.continue_as_new_events
        )

    # -- one iteration ---------------------------------------------------

    async def _iteration(self) -> None:
        s = self.state
        if s.stop_requested is not None:
            self._stop(StopReason.STOPPED, f"{s.stop_requested} (by {s.stop_sender})")
            return
        if s.iteration >= self.req.max_iterations:
            self._stop(StopReason.MAX_ITERATIONS, f"reached {self.req.max_iterations} iterations")
            return
        step = s.iteration + 1
        verdict = check_guardrails(
            self.profile,
            s.guard,
            RunProgress(goal=GOAL_SLOT, iteration=step, activities_used=s.activities_used),
        )
        if verdict.stop_reason is not None:
            self._stop(StopReason(verdict.stop_reason), _guard_detail(verdict.stop_reason, verdict.loop_repeats))
            return
        prompt = await self._build_prompt(step, verdict.prompt_notes)
        try:
            reservation = s.ledger.reserve(s.model, prompt.estimate_micros, step)
        except BudgetError as exc:
            await self._out_of_budget(str(exc))
            return
        s.status = Status.THINKING
        self._publish()
        try:
            out = await self._decide(step, prompt)
        except ActivityError as err:
            spent = _spent_from_failure(err)
            s.ledger.reconcile(reservation, spent.usage, spent.cost_micros, spent.calls, max(spent.attempts, 1))
            self._log(step, "failed", "", cost=spent.cost_micros, attempts=spent.attempts, error=_cause_message(err))
            self._stop(StopReason.FAILED, _cause_message(err))
            return
        spent = out.spent
        s.ledger.reconcile(reservation, spent.usage, spent.cost_micros, spent.calls, spent.attempts)
        s.iteration, s.last_cost_micros, s.feedback = step, spent.cost_micros, None
        s.tool_results = []  # shown once, in the prompt of this decision
        observed = await self._apply(step, out)
        d = out.decision
        # only tool turns ask (so histories without tools carry no marker); before the patch
        # a tool turn counted as a repeat of the unchanged flight plan
        tools = d.tool_calls if d.action == "call_tools" and d.tool_calls and workflow.patched(
            _TOOL_TURN_LOOP_PATCH) else None
        s.guard = record_iteration(
            self.profile, s.guard,
            observe(step, d.action, d.reasoning, d.updates, observed, s.map_metadata, self.profile, tools),
        )
        if s.stage_plan is not None and s.pending is None:
            await self._after_stage_step()
        if s.stop_reason is None and s.pending is None:
            await self._compress_log()

    async def _compress_log(self) -> None:
        """Keep the decision log (and so state, history and prompts) bounded.

        Past the profile's threshold the older entries are summarized by
        ``navigator.compress`` (priced in the ledger like a decide call) and
        replaced by one ``summary`` entry; the mechanical hard cap is the last
        resort when a summary cannot be had (refused budget, failed call).
        """
        s, cfg = self.state, self.profile.compression
        s.decision_log = truncate_entries(s.decision_log, cfg)
        if needs_compression(s.decision_log, cfg) and s.activities_used < self.profile.safety.max_activities:
            request = build_summary_request(s.decision_log, cfg)
            summary = await self._summarize(request)
            if summary is not None:
                s.decision_log = merge_summary(s.decision_log, request, summary, self._entry_from, cfg)
                s.compressions += 1
        s.decision_log = enforce_hard_cap(s.decision_log, cfg, self._entry_from)

    async def _summarize(self, request: SummaryRequest) -> str | None:
        """The summary text of ``request``; None (logged) when refused or failed."""
        s = self.state
        if s.model_rates is None:
            workflow.logger.warning("no model price from scan: the decision log is only trimmed")
            return None
        estimate = estimate_micro_usd(_request_tokens(request), request.max_output_tokens, s.model_rates)
        try:
            reservation = s.ledger.reserve(s.model, estimate, s.iteration)
        except BudgetError as exc:
            workflow.logger.warning("decision-log compression skipped: %s", exc)
            return None
        s.activities_used += 1
        try:
            res: CompressResult = await workflow.execute_activity(
                "navigator.compress",
                CompressInput(model=s.model, goal=s.goal, request=request, ordinal=s.compressions),
                result_type=CompressResult,
                start_to_close_timeout=timedelta(seconds=self.req.decide_retry.start_to_close_s),
                retry_policy=_SHORT_RETRY,
                summary=f"iter {s.iteration} · compress steps {request.first_step}–{request.last_step}",
            )
        except ActivityError as err:
            s.ledger.release(reservation)
            workflow.logger.warning("decision-log compression failed: %s", _cause_message(err))
            return None
        cost = cost_micro_usd(res.usage, s.model_rates, calls=max(res.calls, 1)) if res.calls else 0
        s.ledger.reconcile(reservation, res.usage, cost, res.calls, 1)
        return res.summary

    def _entry_from(self, fields: dict[str, Any]) -> DecisionLogEntry:
        return DecisionLogEntry(**fields, at=workflow.now())

    async def _build_prompt(self, step: int, notes: list[str]) -> PromptOutput:
        s = self.state
        assert s.map_ref is not None and s.map_view_ref is not None
        s.activities_used += 1
        return await workflow.execute_activity(
            "navigator.build_prompt",
            PromptInput(
                step=step,
                goal=None if s.goal_ref else s.goal,
                goal_ref=s.goal_ref,
                model=s.model,
                mode=s.mode,
                max_iterations=self.req.max_iterations,
                max_output_tokens=self.req.max_output_tokens,
                map_ref=s.map_ref,
                view_ref=s.map_view_ref,
                spent_micros=s.ledger.spent_micros,
                max_micros=s.ledger.max_micros,
                recent=self._recent(),
                feedback=s.feedback,
                notes=notes,
                summary_chars=self.profile.compression.summary_text_cap,
                stage=self._stage_lines(),
                tool_results=tool_result_lines(s.tool_results),
            ),
            result_type=PromptOutput,
            start_to_close_timeout=_SHORT_TIMEOUT,
            heartbeat_timeout=_WORK_HEARTBEAT,
            retry_policy=_SHORT_RETRY,
            summary=f"iter {step} · prompt",
        )

    async def _decide(self, step: int, prompt: PromptOutput) -> DecideOutput:
        s, cfg = self.state, self.req.decide_retry
        s.activities_used += 1
        return await workflow.execute_activity(
            "navigator.decide",
            DecideInput(
                step=step,
                model=s.model,
                repo_root=s.repo_root,
                prompt_ref=prompt.prompt_ref,
                view_ref=s.map_view_ref,
                max_output_tokens=self.req.max_output_tokens,
                max_iterations=self.req.max_iterations,
            ),
            result_type=DecideOutput,
            start_to_close_timeout=timedelta(seconds=cfg.start_to_close_s),
            heartbeat_timeout=timedelta(seconds=cfg.heartbeat_s),
            retry_policy=RetryPolicy(
                maximum_attempts=cfg.max_attempts,
                initial_interval=timedelta(seconds=cfg.initial_interval_s),
                backoff_coefficient=cfg.backoff,
                maximum_interval=timedelta(seconds=cfg.max_interval_s),
                non_retryable_error_types=["ModelError", "BudgetError", "ConfigError", "ArtifactError"],
            ),
            summary=f"iter {step} · decide · {s.model} · ≤{format_usd(prompt.estimate_micros)}",
        )

    async def _apply(self, step: int, out: DecideOutput) -> FlightPlan:
        """Apply one decision; returns the plan it proposed (for the guardrails)."""
        s, decision = self.state, out.decision
        if decision.action == "call_tools" and decision.tool_calls:
            # tools first, map later: the results reach the next prompt only
            self._log(step, decision.action, decision.reasoning, out=out,
                      diff=[c.summary() for c in decision.tool_calls])
            results = await self._run_tools(step, decision.tool_calls)
            s.decision_log[-1].error = "; ".join(f"{r.tool}: {r.error}" for r in results if not r.ok) or None
            return s.flight_plan
        if decision.action == "finalize_context" and self._more_stages():
            # finalizing a stage that is not the last one: the next stage starts
            s.stage_done = True
            self._log(step, decision.action, decision.reasoning, out=out, diff=["stage finished by the model"])
            return s.flight_plan
        if decision.action == "finalize_context":
            s.final_summary = shorten(decision.summary or decision.reasoning, _SUMMARY_CHARS)
            self._log(step, decision.action, decision.reasoning, out=out)
            self._stop(StopReason.FINALIZED, "the model finalized the context")
            return s.flight_plan
        if decision.action != "update_flight_plan" or decision.updates is None:
            self._log(step, "invalid", decision.reasoning, out=out, error=decision.error or "no usable update")
            return s.flight_plan
        try:
            proposed = s.flight_plan.apply(decision.updates)
        except (ValidationError, ValueError) as exc:
            self._log(step, "invalid", decision.reasoning, out=out, error=f"update rejected: {_one_line(exc)}")
            return s.flight_plan
        pending = propose_turn(s, step, proposed)
        diff = update_diff_lines(decision.updates)
        # logged before rendering: a paid decision is never lost, even if the render fails
        entry = self._log(step, decision.action, decision.reasoning, out=out, diff=diff)
        entry.config_diff = decision.updates
        await self._render(step, proposed, short_action_label(decision.action, diff), decision.updates)
        entry.map_tokens_after = s.map_metadata.tokens_used if s.map_metadata else 0
        if s.mode is ExecutionMode.INTERACTIVE:
            s.pending = pending
            await self._await_verdict(entry)
        return proposed

    async def _render(
        self, step: int, plan: FlightPlan, label: str, update: FlightPlanUpdate | None = None
    ) -> None:
        """Render ``plan``; with ``update``, send only the update (``plan`` = stored plan + update)."""
        s = self.state
        s.status = Status.RENDERING
        s.activities_used += 1
        self._publish()
        by_update = update is not None and s.map_view_ref is not None
        out: RenderOutput = await workflow.execute_activity(
            "navigator.render_map",
            RenderInput(
                repo_root=s.repo_root,
                step=step,
                flight_plan=None if by_update else plan,
                base_view_ref=s.map_view_ref if by_update else None,
                update=update if by_update else None,
            ),
            result_type=RenderOutput,
            start_to_close_timeout=_SHORT_TIMEOUT,
            heartbeat_timeout=_WORK_HEARTBEAT,
            retry_policy=_SHORT_RETRY,
            summary=f"iter {step} · {shorten(label, 90)} · {format_usd(s.last_cost_micros)}",
        )
        s.flight_plan = plan
        self._take_render(out)

    def _take_render(self, out: RenderOutput) -> None:
        s = self.state
        s.map_ref, s.map_view_ref, s.map_metadata = out.map_ref, out.view_ref, out.metadata

    # -- interactive -----------------------------------------------------

    async def _await_verdict(self, entry: DecisionLogEntry) -> None:
        s = self.state
        pending = s.pending
        assert pending is not None
        s.status = Status.AWAITING_APPROVAL
        self._publish()
        timed_out = False
        try:
            await workflow.wait_condition(
                lambda: pending.verdict is not None
                or s.stop_requested is not None
                or s.mode is ExecutionMode.AUTONOMOUS,
                timeout=timedelta(seconds=self.req.approval.timeout_s),
                timeout_summary=f"approval of turn {pending.turn}",
            )
        except asyncio.TimeoutError:
            timed_out = True
            pending.verdict, pending.verdict_sender = self.req.approval.default_verdict, "approval-timeout"
        verdict = pending.verdict or ("stop" if s.stop_requested is not None else "approve")
        entry.verdict, entry.feedback = verdict, pending.feedback
        s.pending = None
        if verdict == "approve":
            if pending.edited:
                await self._render(pending.turn, s.flight_plan, "edited plan")
                entry.diff_lines = plan_diff_lines(pending.previous_plan, s.flight_plan)
                entry.map_tokens_after = s.map_metadata.tokens_used if s.map_metadata else 0
            return
        restore_turn(s, pending)
        if verdict == "reject":
            s.feedback = pending.feedback or "The user rejected the last proposal without feedback."
        elif timed_out:
            self._stop(StopReason.APPROVAL_TIMEOUT, f"no verdict for turn {pending.turn} in time")
        else:
            self._stop(StopReason.STOPPED, f"{s.stop_requested or 'stopped'} (by {s.stop_sender or pending.verdict_sender})")

    async def _out_of_budget(self, message: str) -> None:
        s = self.state
        self._log(s.iteration + 1, "budget_refused", "", error=message, step_taken=False)
        if s.mode is not ExecutionMode.INTERACTIVE:
            self._stop(StopReason.BUDGET_EXHAUSTED, message)
            return
        s.status = Status.AWAITING_BUDGET
        self._publish()
        limit = s.ledger.max_micros
        try:
            await workflow.wait_condition(
                lambda: s.ledger.max_micros > limit
                or s.stop_requested is not None
                or s.mode is ExecutionMode.AUTONOMOUS,
                timeout=timedelta(seconds=self.req.approval.timeout_s),
                timeout_summary="budget decision",
            )
        except asyncio.TimeoutError:
            self._stop(StopReason.BUDGET_EXHAUSTED, f"{message}; nobody raised the budget in time")
            return
        if s.ledger.max_micros > limit:
            return  # the loop re-prices the next call under the new limit
        self._stop(StopReason.BUDGET_EXHAUSTED, message)

    # -- finalize --------------------------------------------------------

    async def _finalize(self) -> ExplorationResult:
        s = self.state
        s.status = Status.FINALIZING
        s.activities_used += 1
        self._publish()
        info = workflow.info()
        written: WriteResultOutput = await workflow.execute_activity(
            "navigator.write_result",
            WriteResultInput(
                out_dir=self.req.out_dir,
                workflow_id=info.workflow_id,
                goal=s.goal,
                repo_root=s.repo_root,
                map_ref=s.map_ref,
                report_json=self._report_json(),
                summary=s.final_summary,
                stage_plan=self._stage_plan_markdown(),
            ),
            result_type=WriteResultOutput,
            start_to_close_timeout=_SHORT_TIMEOUT,
            heartbeat_timeout=_WORK_HEARTBEAT,
            retry_policy=_SHORT_RETRY,
            summary=f"write result · {s.stop_reason.value if s.stop_reason else '?'} · "
            f"{format_usd(s.ledger.spent_micros)}",
        )
        s.status = Status.COMPLETED if s.stop_reason is not StopReason.FAILED else Status.FAILED
        self._publish()
        assert s.stop_reason is not None
        # never return while a message handler still runs (its effect would be lost)
        await workflow.wait_condition(workflow.all_handlers_finished)
        return ExplorationResult(
            workflow_id=info.workflow_id,
            stop_reason=s.stop_reason,
            stop_detail=s.stop_detail,
            iterations=s.iteration,
            decisions=s.decisions_logged,
            cost_micros=s.ledger.spent_micros,
            cost_usd=micros_to_usd(s.ledger.spent_micros),
            max_usd=micros_to_usd(s.ledger.max_micros),
            usage=s.ledger.total_usage(),
            model_attempts=s.ledger.attempts,
            map_metadata=s.map_metadata,
            context_path=written.context_path,
            report_path=written.report_path,
            context_ref=written.context_ref,
            map_ref=s.map_ref,
            continued_runs=s.continued_runs,
        )

    def _report_json(self) -> str:
        return json.dumps(report_dict(self.state, workflow.info().workflow_id), sort_keys=True)

    # -- bookkeeping -----------------------------------------------------

    def _stop(self, reason: StopReason, detail: str) -> None:
        s = self.state
        if s.stop_reason is None:
            s.stop_reason, s.stop_detail = reason, detail
            workflow.logger.info("navigator stopping: %s (%s)", reason.value, detail)

    def _log(
        self,
        step: int,
        action: str,
        reasoning: str,
        *,
        out: DecideOutput | None = None,
        cost: int = 0,
        attempts: int = 0,
        diff: list[str] | None = None,
        error: str | None = None,
        step_taken: bool = True,
    ) -> DecisionLogEntry:
        s = self.state
        tokens = s.map_metadata.tokens_used if s.map_metadata else 0
        spent = out.spent if out else None
        entry = DecisionLogEntry(
            step=step,
            action=action,
            reasoning=shorten(reasoning, _LOG_REASONING_CHARS),
            diff_lines=diff or [],
            cost_micros=spent.cost_micros if spent else cost,
            input_tokens=spent.usage.input_tokens if spent else 0,
            output_tokens=spent.usage.output_tokens if spent else 0,
            attempts=spent.attempts if spent else attempts,
            map_tokens_before=tokens,
            map_tokens_after=tokens,
            at=workflow.now(),
            error=error,
            decision_ref=out.decision_ref if out else None,
        )
        s.decision_log.append(entry)
        s.decisions_logged += 1
        if step_taken:
            s.last_reasoning, s.last_diff_lines = entry.reasoning, entry.diff_lines
        self._publish()
        return entry

    def _recent(self) -> list[RecentDecision]:
        return recent_decisions(self.state, self.req.prompt_recent_decisions)

    def _publish(self) -> None:
        """Search attributes (only when changed) and the Web UI details.

        Transient statuses (thinking, rendering) are not upserted: each upsert
        is a history event, and the Web UI details show them anyway.
        """
        s = self.state
        status = s.status if s.status not in _TRANSIENT else Status.THINKING
        values = (s.repo_root, status.value, s.ledger.spent_micros, s.iteration)
        if values != self._published:
            self._published = values
            workflow.upsert_search_attributes(
                [
                    SA_REPO.value_set(shorten(s.repo_root, 250)),
                    SA_STATUS.value_set(status.value),
                    SA_COST_USD.value_set(float(micros_to_usd(s.ledger.spent_micros))),
                    SA_ITERATION.value_set(s.iteration),
                ]
            )
        workflow.set_current_details(turn_report_markdown(build_turn_report(s), s.goal))

    # -- messages --------------------------------------------------------

    @workflow.signal(name="approve")
    def approve(self, inp: ApproveInput) -> None:
        """Accept the pending turn."""
        if _invalid_payload("approve", inp):
            return
        self._verdict("approve", inp.turn, inp.sender, None, inp.kind)

    @workflow.signal(name="reject")
    def reject(self, inp: RejectInput) -> None:
        """Undo the pending turn; the feedback goes into the next prompt."""
        if _invalid_payload("reject", inp):
            return
        self._verdict("reject", inp.turn, inp.sender, inp.feedback, inp.kind)

    def _verdict(self, verdict: Verdict, turn: int, sender: str, feedback: str | None, kind: str) -> None:
        if not record_verdict(self.state, verdict, turn, sender, feedback, kind):
            workflow.logger.info("ignored %s for %s %d from %s: stale or duplicate", verdict, kind, turn, sender)

    @workflow.signal(name="stop")
    def stop(self, inp: StopInput) -> None:
        """Finalize now with the best map so far."""
        if _invalid_payload("stop", inp):
            return
        request_stop(self.state, inp.reason, inp.sender, inp.turn)

    @workflow.signal(name="set_mode")
    def set_mode(self, inp: SetModeInput) -> None:
        """Switch between autonomous and interactive."""
        if _invalid_payload("set_mode", inp):
            return
        self.state.mode = inp.mode
        self.state.note("set_mode", inp.sender, None, f"mode → {inp.mode.value}")

    @workflow.signal(name="raise_budget")
    def raise_budget(self, inp: RaiseBudgetInput) -> None:
        """Raise the USD limit (also answers a budget park)."""
        if _invalid_payload("raise_budget", inp):
            return
        add = usd_to_micros(inp.add_usd)
        if add <= 0:
            # a signal must never fail the workflow task: ignore and say so
            workflow.logger.warning("ignored raise_budget of %s USD from %s: below one micro-dollar", inp.add_usd, inp.sender)
            return
        self.state.ledger.raise_limit(add)
        self.state.note("raise_budget", inp.sender, None, f"+{format_usd(add)}")

    @workflow.query(name="get_status")
    def get_status(self) -> TurnReport:
        """The current turn report."""
        return build_turn_report(self.state)

    @workflow.query(name="get_decision_log")
    def get_decision_log(self) -> DecisionLogView:
        """Every logged decision so far."""
        return DecisionLogView(entries=self.state.decision_log, notes=self.state.notes)

    @workflow.query(name="get_flight_plan")
    def get_flight_plan(self) -> FlightPlan:
        """The current (or proposed, while awaiting approval) flight plan."""
        return self.state.flight_plan

    # DESIGN.md's names for the same three queries (thin aliases; same payloads)

    @workflow.query(name="status")
    def status_alias(self) -> TurnReport:
        """Alias of ``get_status``."""
        return self.get_status()

    @workflow.query(name="decision_log")
    def decision_log_alias(self) -> DecisionLogView:
        """Alias of ``get_decision_log``."""
        return self.get_decision_log()

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
        edited_plan(self.state, inp)


def _guard_detail(reason: str, repeats: int) -> str:
    """The stop detail of a guardrail stop, for the report and the Web UI."""
    if reason == "loop_detected":
        return f"the same flight plan, the same tool call or a near-identical decision came {repeats} times"
    if reason == "activity_cap":
        return "the run reached its profile's hard cap on activities"
    if reason == "stalled":
        return "too many iterations without a better map"
    return reason


def _invalid_payload(name: str, inp: object) -> bool:
    """True (and logged) for a payload that decoded to nothing, e.g. JSON ``null``.

    The data converter drops payloads that fail validation before a handler
    runs; ``null`` reaches the handler as ``None``, and raising there would
    fail the workflow task on every retry, wedging the run.
    """
    if inp is None:
        workflow.logger.warning("ignored %s signal with an empty (null) payload", name)
        return True
    return False


def _request_tokens(request: SummaryRequest) -> int:
    """An upper bound of the summarization prompt's tokens (one per character, plus framing)."""
    text = sum(len(e.reasoning) + sum(len(d) for d in e.diff_lines[:6]) + 40 for e in request.entries)
    return text + 1000


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:500]


def _cause_message(err: ActivityError) -> str:
    cause = err.cause
    return _one_line(cause) if cause is not None else _one_line(err)


def _spent_from_failure(err: ActivityError) -> AttemptUsage:
    """Usage of every attempt of a failed decide (failure details or the last heartbeat)."""
    cause = err.cause
    details: Any = ()
    if isinstance(cause, ApplicationError):
        details = cause.details
    elif isinstance(cause, TimeoutError):
        details = cause.last_heartbeat_details
    for item in details or ():
        try:
            return AttemptUsage.model_validate(item)
        except ValidationError:
            continue
    return AttemptUsage(attempts=1)
