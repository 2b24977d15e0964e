"""One ReAct step: model turn → code tools or a subagent → results → next turn, until the step ends.

``ReactStepRunner.run(step)`` runs the executor of one research step (the
``research.execute`` task: code tools, ``finish_step``, ``delegate``,
``navigate``):

* before every turn: a stop ends the step; the step's turn cap, the run's
  global cap on calls and the guardrails (iteration cap, activity cap, loop
  detection) may end it; their prompt notes (goal anchor, loop / stall
  warnings) go into the turn;
* the turn is a priced model call (:mod:`.model_call`); its conversation is
  the previous turn's stored request plus the calls and their results, so
  only the newest results pass through history;
* tool calls run through :class:`~.tools.ToolRunner` (errors are results);
  ``delegate`` / ``navigate`` run a child workflow through
  :class:`~.subagents.SubagentRunner` and the child's answer is the result;
* ``finish_step`` ends the step with the findings' reference (the workflow
  aggregates them and clears the executor's messages).

Every turn is logged with its cost; the guardrails observe each turn (distinct
tool calls are progress, the same call repeated is a loop; the run's cited
lines are the quality a stall is measured by).
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from durable_navigator.navcore.run.artifacts import ArtifactRef
    from durable_navigator.navcore.navigator.guardrails import (
        Observation,
        RunProfile,
        RunProgress,
        check_guardrails,
        decision_signature,
        record_iteration,
        tools_fingerprint,
    )
    from durable_navigator.navcore.navigator.model_calls import ExecuteOut, ResearchExecuteSpec
    from durable_navigator.navcore.navigator.prompt import GOAL_SLOT
    from durable_navigator.navcore.navigator.report import shorten
    from durable_navigator.navcore.research.research import ExecutorState, ResearchState, ResearchStep
    from durable_navigator.navcore.navigator.state import Status
    from durable_navigator.navcore.run.subagents import AgentProfile, SubagentOutcome
    from durable_navigator.navcore.run.tools import ToolCall
    from durable_navigator.workflows.blocks.decision_log import DecisionLogWriter
    from durable_navigator.workflows.blocks.model_call import CallOutcome, ModelCaller
    from durable_navigator.workflows.blocks.subagents import SubagentRunner
    from durable_navigator.workflows.blocks.tools import ToolRunner, tool_result_lines

__all__ = ["ReactStepRunner", "ReactSettings", "StepOutcome"]

StepStatus = Literal["finished", "capped", "stopped", "refused", "failed", "guard"]


@dataclass(frozen=True)
class ReactSettings:
    """What the executor may do in each step."""

    max_turns: int
    max_tool_calls: int
    #: the run's global cap on calls (model calls + tool calls + subagents)
    max_calls: int
    tools: list[str]
    #: profiles ``delegate`` may start (empty: no delegation)
    profiles: dict[str, AgentProfile] = field(default_factory=dict)
    can_navigate: bool = False
    navigate_profile: AgentProfile | None = None
    instructions: str = ""
    max_output_tokens: int = 2048


@dataclass
class StepOutcome:
    """How a step ended."""

    status: StepStatus
    findings_ref: ArtifactRef | None = None
    error: str | None = None
    #: which guard ended it: loop_detected, activity_cap, max_iterations, max_calls
    guard: str | None = None
    #: a refused call's own message (the budget)
    refusal: str | None = None


class ReactStepRunner:
    """Runs the executor's ReAct loop for one plan step at a time."""

    def __init__(
        self,
        state: Callable[[], ResearchState],
        caller: ModelCaller,
        tools: ToolRunner,
        log: DecisionLogWriter,
        subagents: SubagentRunner | None,
        guard: RunProfile,
        settings: ReactSettings,
        *,
        on_child: Callable[[SubagentOutcome, ResearchStep], Awaitable[list[str]]],
        spec_common: Callable[[], dict],
        publish: Callable[[], None],
    ) -> None:
        """``on_child`` turns a subagent's outcome into the executor's result lines (and merges its findings);
        ``spec_common`` gives the fields every research spec shares (model, repo, goal, findings)."""
        self._state, self.caller, self.tools, self.log = state, caller, tools, log
        self.subagents, self.guard, self.settings = subagents, guard, settings
        self._on_child, self._common, self._publish = on_child, spec_common, publish

    async def run(self, step: ResearchStep) -> StepOutcome:
        """Run ``step`` until it finishes, a cap or guard ends it, or the run stops."""
        s = self._state()
        if s.executor is None or s.executor.step_index != step.index:
            s.executor = ExecutorState(step_index=step.index)
        ex = s.executor
        while True:
            if s.steering.stop_requested is not None:
                return StepOutcome("stopped")
            if ex.turn >= self.settings.max_turns:
                return StepOutcome("capped", findings_ref=ex.findings_ref,
                                   error=f"the step used its {self.settings.max_turns} turns without finish_step")
            if s.calls_used >= self.settings.max_calls:
                return StepOutcome("guard", findings_ref=ex.findings_ref, guard="max_calls",
                                   error=f"the run made its {self.settings.max_calls} calls (global cap)")
            turn_no = s.run.iteration + 1
            verdict = check_guardrails(self.guard, s.guard,
                                       RunProgress(goal=GOAL_SLOT, iteration=turn_no, activities_used=s.run.activities_used))
            if verdict.stop_reason is not None:
                return StepOutcome("guard", findings_ref=ex.findings_ref, guard=verdict.stop_reason,
                                   error=f"guardrail: {verdict.stop_reason}")
            s.run.status = Status.PREPARING
            self._publish()
            outcome = await self.caller.call(s.model, self._spec(step, ex, turn_no, verdict.prompt_notes),
                                             step=turn_no, label=f"step {step.index + 1} · turn {ex.turn + 1}")
            s.calls_used += 1
            if outcome.status != "ok" or not isinstance(outcome.result, ExecuteOut):
                return self._not_answered(turn_no, step, outcome)
            out = outcome.result
            s.run.iteration, s.log.last_cost_micros = turn_no, outcome.cost_micros
            ex.turn += 1
            step.turns = ex.turn
            ex.request_ref, ex.last_calls, ex.last_text, ex.results = outcome.request_ref, out.calls, out.reasoning, []
            done = await self._apply(turn_no, step, ex, out, outcome)
            if out.action != "finish_step":  # ending a step is not a move that can repeat
                self._observe(turn_no, out)
            if done:
                return StepOutcome("finished", findings_ref=ex.findings_ref)

    def _spec(self, step: ResearchStep, ex: ExecutorState, turn_no: int, notes: list[str]) -> ResearchExecuteSpec:
        st = self.settings
        # the guardrails' wording is the navigator's; the executor ends a step with finish_step
        notes = [n.replace("finalize_context", "finish_step") for n in notes]
        return ResearchExecuteSpec(
            **self._common(), index=turn_no, step_index=step.index, step=step.description, turn=ex.turn + 1,
            max_turns=st.max_turns, previous_ref=ex.request_ref, last_calls=ex.last_calls, last_text=ex.last_text,
            results=ex.results, notes=notes, tools=st.tools,
            profiles=[f"{p.name}: {p.description or p.kind}" for p in st.profiles.values()],
            can_navigate=st.can_navigate, max_tool_calls=st.max_tool_calls,
        )

    async def _apply(self, turn_no: int, step: ResearchStep, ex: ExecutorState, out: ExecuteOut,
                     outcome: CallOutcome) -> bool:
        """Carry out one turn; True when the step is finished."""
        s = self._state()
        paid = dict(cost_micros=outcome.cost_micros, usage=outcome.usage, attempts=outcome.attempts)
        if out.action == "finish_step":
            ex.findings_ref = out.findings_ref
            self.log.write(turn_no, "finish_step", out.summary or out.reasoning,
                           diff=[f"step {step.index + 1}: {out.findings} findings"], **paid)
            return True
        if out.action == "call_tools":
            calls = out.tool_calls[: self.settings.max_tool_calls]
            room = max(self.settings.max_calls - s.calls_used, 0)
            entry = self.log.write(turn_no, "call_tools", out.reasoning, diff=[c.summary() for c in calls], **paid)
            results = await self.tools.run(s.repo_root, turn_no, calls[:room])
            s.calls_used += len(results)
            lines = tool_result_lines(results)
            lines += [f"### {c.summary()}\nERROR: not run: the run reached its global cap on calls" for c in calls[room:]]
            ex.results = lines
            entry.error = "; ".join(f"{r.tool}: {r.error}" for r in results if not r.ok) or None
            return False
        if out.action in ("delegate", "navigate"):
            ex.results = [await self._delegate(turn_no, step, out, paid)]
            return False
        self.log.write(turn_no, "invalid", out.reasoning, error=out.error or "no usable function call", **paid)
        ex.results = []
        return False

    async def _delegate(self, turn_no: int, step: ResearchStep, out: ExecuteOut, paid: dict) -> str:
        """Run the asked subagent; its outcome (or why it did not run) is the turn's one result."""
        st = self.settings
        profile = st.navigate_profile if out.action == "navigate" else st.profiles.get(out.profile or "")
        task = out.task or step.description
        head = f"### {out.action} {profile.name if profile else out.profile}: {shorten(task, 100)}"
        entry = self.log.write(turn_no, out.action, out.reasoning, diff=[f"{out.action} → {out.profile or 'navigator'}: "
                                                                          f"{shorten(task, 160)}"], **paid)
        if self.subagents is None or profile is None:
            entry.error = "subagents are not available in this run"
            return f"{head}\nERROR: {entry.error}; use the code tools"
        self._state().calls_used += 1
        child = await self.subagents.run(profile, task, step.index)
        entry.error = None if child.completed_normally else f"subagent {child.workflow_id}: {child.stop_reason}"
        lines = await self._on_child(child, step)
        return "\n".join([head, *lines])

    def _not_answered(self, turn_no: int, step: ResearchStep, outcome: CallOutcome) -> StepOutcome:
        """A refused, stopped or failed turn: logged (with what it cost), and the step ends."""
        action = {"refused": "budget_refused", "stopped": "stopped"}.get(outcome.status, "failed")
        if outcome.status != "stopped" or outcome.attempts:
            self.log.write(turn_no, action, "", cost_micros=outcome.cost_micros, usage=outcome.usage,
                           attempts=outcome.attempts, error=outcome.error, step_taken=False)
        if outcome.status == "refused":
            return StepOutcome("refused", refusal=outcome.error or "the budget is exhausted")
        if outcome.status == "stopped":
            return StepOutcome("stopped")
        return StepOutcome("failed", error=outcome.error or "the model call failed")

    def _observe(self, turn_no: int, out: ExecuteOut) -> None:
        s = self._state()
        calls: list[ToolCall] | None = out.tool_calls if out.action == "call_tools" and out.tool_calls else None
        if calls:
            fingerprint = tools_fingerprint(calls)
        else:
            body = f"{out.action}:{out.profile or ''}:{out.task or out.reasoning}"
            fingerprint = "turn:" + hashlib.sha256(body.encode()).hexdigest()[:16]
        obs = Observation(step=turn_no, action=out.action, plan_fingerprint=fingerprint,
                          signature=decision_signature(out.action, out.reasoning, None, calls),
                          quality=float(s.findings.lines))
        s.guard = record_iteration(self.guard, s.guard, obs)
