"""An investigation's planning: plan maker → plan reviewer → confirmation rounds, then the user's verdict.

:class:`StagePlanning` runs the planning loop of an :class:`InvestigationWorkflow` (up to
``max_plan_rounds`` rounds; a rejected round re-plans with the critique; the last plan is kept
at the cap, a failed plan maker gives one fallback stage) and, in interactive mode, asks for a
verdict on the plan through the approval gate (a rejection re-plans once with the feedback; a
second rejection runs the last plan with a warning). While the plan awaits its verdict the human
may edit it (:meth:`StagePlanning.edit`, the ``edit_stage_plan`` update: its validator,
:meth:`StagePlanning.edit_problem`, refuses a bad plan naming the field); an approval then runs
the edited stages. The workflow hands in its model call,
decision log and stop as :class:`~workflows.blocks.stage_work.InvestigationHooks`.
"""

from __future__ import annotations

from collections.abc import Callable

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from durable_navigator.navcore.investigation.investigation import (
        InvestigationRequest,
        InvestigationState,
        PlannedStage,
        PlanRound,
        StageRecord,
    )
    from durable_navigator.navcore.planning.investigation_plan import stage_plan_problem
    from durable_navigator.navcore.navigator.messages import EditStagePlanInput, StagePlanEdited
    from durable_navigator.navcore.navigator.report import shorten
    from durable_navigator.navcore.navigator.state import ExecutionMode, PendingTurn, Status, StopReason, Verdict
    from durable_navigator.navtypes.flightplan import FlightPlan
    from durable_navigator.workflows.blocks.approval import ApprovalGate
    from durable_navigator.workflows.blocks.stage_work import InvestigationHooks

__all__ = ["StagePlanning"]


class StagePlanning:
    """Plans an investigation's stages on the workflow's state (read through ``state``)."""

    def __init__(self, state: Callable[[], InvestigationState], req: InvestigationRequest, gate: ApprovalGate,
                 hooks: InvestigationHooks) -> None:
        self._state, self.req, self.gate, self.hooks = state, req, gate, hooks

    @property
    def state(self) -> InvestigationState:
        return self._state()

    async def plan(self) -> None:
        """The planning loop, then (interactive) the verdict on the plan; the run moves to its stages."""
        s = self.state
        stages = await self._planning_loop()
        if stages is None:
            return
        self._set_stages(stages)
        if s.steering.mode is ExecutionMode.INTERACTIVE and s.run.stop_reason is None:
            for attempt in (1, 2):
                verdict, feedback = await self._approve_plan()
                if verdict != "reject":
                    break
                s.feedback = feedback or "The user rejected the plan without feedback."
                s.plan_rounds.append(PlanRound(round=len(s.plan_rounds), reason=f"rejected by the user: {s.feedback}"))
                if attempt == 2:
                    s.warnings.append("the re-plan was rejected too: the last plan runs (stop the run to end it)")
                    break
                replanned = await self._planning_loop()
                if replanned is None:
                    break
                self._set_stages(replanned)
        if s.run.stop_reason is None:
            s.phase = "stages"

    async def _planning_loop(self) -> list[PlannedStage] | None:
        """Plan maker → reviewer → confirmation, until the confirmation exits or the round cap."""
        s, req = self.state, self.req
        critique, first = "", len(s.plan_rounds)
        stages: list[PlannedStage] = []
        for r in range(first, first + req.max_plan_rounds):
            made = await self.hooks.call("investigate.plan", f"plan round {r + 1} · plan maker", critique=critique,
                                    feedback=s.feedback)
            if made is None:
                if s.run.stop_reason is not None:
                    return None
                stages = [PlannedStage(title="answer the goal", task=s.goal[:2000],
                                       criteria=["the goal is answered with cited lines of the code"])]
                s.warnings.append(f"plan round {r + 1}: the plan maker failed; one fallback stage")
                s.plan_rounds.append(PlanRound(round=r, stages=[stages[0].title], exit=True, reason="fallback"))
                return stages
            stages = made.stages
            review = await self.hooks.call("investigate.review", f"plan round {r + 1} · reviewer", subject="plan",
                                      stages=stages)
            if review is None and s.run.stop_reason is not None:
                return None
            critique = review.critique if review else "(the reviewer did not answer)"
            confirm = await self.hooks.call("investigate.confirm", f"plan round {r + 1} · confirmation", subject="plan",
                                       stages=stages, critique=critique)
            if confirm is None and s.run.stop_reason is not None:
                return None
            exit_, reason = (confirm.exit, confirm.reason) if confirm else (True, "the confirmation did not answer")
            s.plan_rounds.append(PlanRound(round=r, stages=[st.title for st in stages], critique=shorten(critique, 1000),
                                           exit=exit_, reason=shorten(reason, 1000)))
            self.hooks.log("plan_round", f"round {r + 1}: {'accepted' if exit_ else 'rejected'}: {reason}",
                      [f"[{i}] {st.title}: {'; '.join(st.criteria)}" for i, st in enumerate(stages)]
                      + [f"critique: {shorten(critique, 300)}"])
            if exit_:
                return stages
        s.warnings.append(f"the planning loop reached its cap of {req.max_plan_rounds} rounds; the last plan is kept")
        return stages

    def _set_stages(self, planned: list[PlannedStage]) -> None:
        s = self.state
        s.stages = [StageRecord(index=i, title=p.title, task=p.task, criteria=list(p.criteria), profile=p.profile,
                                branches=max(p.branches, self.req.branches), max_loops=p.max_loops)
                    for i, p in enumerate(planned[: self.req.max_stages])]
        s.current = 0

    # -- the human's edit (the ``edit_stage_plan`` update) ----------------------------------

    def edit_problem(self, inp: EditStagePlanInput) -> str | None:
        """Why the edit is refused (one line naming the field), or None: the validator's check."""
        pending = self.state.steering.pending
        if pending is None or pending.kind != "plan" or pending.verdict is not None:
            return "the stage plan is not awaiting a verdict; edit it while `status` shows it pending"
        if inp.turn != pending.turn:
            return f"round {inp.turn} is not the pending round {pending.turn} of the stage plan; refresh the status"
        return stage_plan_problem(inp.stages, max_stages=self.req.max_stages,
                                  profiles=[self.req.worker.name, *self.req.profiles])

    def edit(self, inp: EditStagePlanInput) -> StagePlanEdited:
        """Make the edited stages the plan awaiting the verdict (an approval runs them)."""
        s = self.state
        pending = s.steering.pending
        assert pending is not None  # edit_problem checked it
        self._set_stages(list(inp.stages))
        pending.edited = True
        s.steering.note("edit_stage_plan", inp.sender, inp.turn, f"{len(inp.stages)} stages")
        titles = [st.title for st in s.stages]
        self.hooks.log("plan_edit", f"the user ({inp.sender}) edited the plan: {len(titles)} stages",
                       [f"[{st.index}] {st.title}: {'; '.join(st.criteria)}"
                        + (f" (at most {st.max_loops} loops)" if st.max_loops else "") for st in s.stages])
        self.hooks.publish()
        return StagePlanEdited(turn=inp.turn, titles=titles,
                               detail=f"the stage plan of round {inp.turn} now has {len(titles)} stages")

    async def _approve_plan(self) -> tuple[Verdict, str | None]:
        s = self.state
        pending = PendingTurn(turn=len(s.plan_rounds), kind="plan", previous_plan=FlightPlan(goal=s.goal[:8000]),
                              proposed_plan=FlightPlan(goal=s.goal[:8000]))
        verdict, timed_out = await self.gate.verdict(pending, "the investigation plan")
        s.run.status = Status.THINKING
        self.hooks.log("plan_verdict", f"{verdict}" + (f": {pending.feedback}" if pending.feedback else ""), [])
        if verdict == "stop":
            reason = StopReason.APPROVAL_TIMEOUT if timed_out else StopReason.STOPPED
            self.hooks.stop(reason, "no verdict on the plan in time" if timed_out else self.hooks.stop_detail(pending))
        return verdict, pending.feedback
