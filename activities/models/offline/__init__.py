"""The ``offline`` model: the embedded default when no API key is set.

A deterministic policy over the repo-map index (lexical BM25 + reference-graph
ranking from ``repomap``, plus BM25 over symbol bodies) that makes real zoom-in /
zoom-out decisions with human-readable reasons and finalizes when the budget is
well used and the ranking is stable; a deterministic planner for the
planning phase, stage checks, reflection and compression; and a deterministic
researcher (plan, code-tool steps, refinery, an extractive cited answer). No network; same
inputs → same answer. It implements the one model interface: it reads the
request's typed task (never the prompt text) and answers a navigator turn with
the same function calls an LLM makes (parsed by the same code), and every other
task with the canonical text an LLM is asked for. It is free: usage is zero.

Its engine is a typed dependency: an :data:`EngineSource` that opens (and keeps
fresh) the repository's ``RepoMap``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from durable_navigator.navcore.model.call_kinds import OFFLINE_NEEDS_ENGINE, RESEARCH_KINDS
from durable_navigator.activities.models.base import CallContext
from durable_navigator.activities.models.offline.config import OfflinePolicyConfig, OfflineTurn, PolicyOutcome
from durable_navigator.activities.models.offline.diff import finalize_summary
from durable_navigator.activities.models.offline.feedback import feedback_update
from durable_navigator.activities.models.offline.investigate import investigate_answer
from durable_navigator.activities.models.offline.planner import OfflinePlanner, OfflinePlannerConfig
from durable_navigator.activities.models.offline.policy import plan_turn
from durable_navigator.activities.models.offline.research import OfflineResearchConfig, OfflineResearcher
from durable_navigator.activities.models.offline.terms import parse_feedback
from durable_navigator.activities.models.offline.tools import TOOL_TURN_PREFIX, tool_round
from durable_navigator.navcore.run.decision import (
    FINALIZE_FUNCTION,
    UPDATE_FUNCTION,
    ModelDecision,
    decision_from_calls,
)
from durable_navigator.navtypes.errors import ModelError
from durable_navigator.navcore.model.model import DecideTask, InvestigateTask, ModelRequest, ModelResponse, ToolCallOut
from durable_navigator.navcore.run.tools import ToolCall

if TYPE_CHECKING:
    from durable_navigator.repomap import RepoMap

__all__ = ["OFFLINE_MODEL", "OfflineModel", "OfflineTurn", "EngineSource", "decide_turn", "offline_decision"]

OFFLINE_MODEL = "offline"

#: the opened (and fresh) repo-map engine of a repository root
EngineSource = Callable[[str], Awaitable["RepoMap"]]


class OfflineModel:
    """The ``offline`` model (implements :class:`~activities.models.base.Model`)."""

    def __init__(
        self,
        engines: EngineSource,
        policy: OfflinePolicyConfig | None = None,
        planner: OfflinePlannerConfig | None = None,
        research: OfflineResearchConfig | None = None,
    ) -> None:
        self._engines = engines
        self.policy = policy or OfflinePolicyConfig()
        self.planner = OfflinePlanner(planner or OfflinePlannerConfig())
        self.researcher = OfflineResearcher(research)

    async def request(self, req: ModelRequest, ctx: CallContext) -> ModelResponse:
        """Answer the request's task; the index work runs in a thread so the activity can heartbeat."""
        task = req.task
        # reflections and summaries read the task only
        engine = await self._engines(task.repo_root) if task.kind in OFFLINE_NEEDS_ENGINE else None
        ctx.heartbeat(f"offline: {task.kind}")
        if isinstance(task, DecideTask):
            turn = OfflineTurn(
                goal=task.goal,
                flight_plan=task.flight_plan,
                iteration=task.index,
                max_iterations=task.max_iterations,
                engine=engine,
                map_metadata=task.map_metadata,
                feedback=task.feedback,
                recent_decisions=tuple(task.recent_decisions),
                tools_available=task.tools_available,
                tool_results=tuple(task.tool_results),
            )
            text, calls = await asyncio.to_thread(decide_turn, turn, self.policy)
            return ModelResponse(text=text, tool_calls=calls, calls=1)
        if task.kind in RESEARCH_KINDS:
            return await asyncio.to_thread(self.researcher.answer, task, engine)
        if isinstance(task, InvestigateTask):
            return ModelResponse(text=investigate_answer(task), calls=1)
        text = await asyncio.to_thread(self.planner.answer, task, engine)
        return ModelResponse(text=text, calls=1)


def decide_turn(turn: OfflineTurn, cfg: OfflinePolicyConfig) -> tuple[str, list[ToolCallOut]]:
    """One navigator turn as (reasoning text, function calls), synchronously (the benchmark loop uses it)."""
    if turn.engine is None:
        raise ModelError("the offline model needs the repo-map engine of the repository; open it first")
    from durable_navigator.repomap.tokens import estimate_tokens

    calls = _tool_round(turn, cfg)
    if calls:
        return _tool_reasoning(calls), [ToolCallOut(name=c.name, args=dict(c.args)) for c in calls]
    outcome = _outcome(turn, cfg, estimate_tokens)
    if outcome.finalize:
        summary = outcome.summary or outcome.reasoning
        return outcome.reasoning, [ToolCallOut(name=FINALIZE_FUNCTION, args={"summary": summary})]
    updates = outcome.update.model_dump(mode="json", exclude_defaults=True)
    return outcome.reasoning, [ToolCallOut(name=UPDATE_FUNCTION, args={"reasoning": outcome.reasoning, "updates": updates})]


def offline_decision(turn: OfflineTurn, cfg: OfflinePolicyConfig | None = None) -> ModelDecision:
    """One turn as the workflow receives it (parsed by the same code as an LLM's function calls).

    For in-process loops (the benchmark's labelled shortcut, tests); usage is zero.
    """
    text, calls = decide_turn(turn, cfg or OfflinePolicyConfig())
    decision = decision_from_calls([(c.name, c.args) for c in calls], OFFLINE_MODEL, text)
    if isinstance(decision, str):  # the policy's own answers always parse; say so loudly if not
        raise ModelError(f"the offline policy produced an unusable answer: {decision}")
    return decision


def _tool_round(turn: OfflineTurn, cfg: OfflinePolicyConfig) -> list[ToolCall]:
    """The first turn's code-tool calls (see ``offline.tools``), when the caller can run them."""
    if not turn.tools_available or (turn.feedback and turn.feedback.strip()) or cfg.learned.enabled:
        return []  # the learned allocation ranks every chunk itself: no tool round to seed it
    goal = turn.goal or turn.flight_plan.goal or ""
    return tool_round(goal, turn.flight_plan, turn.iteration, turn.max_iterations, turn.recent_decisions, cfg.tools)


def _outcome(turn: OfflineTurn, cfg: OfflinePolicyConfig, estimate: Any) -> PolicyOutcome:
    intent = parse_feedback(turn.feedback)
    if intent.finalize and not (intent.mentions or intent.ignores or intent.less or intent.more):
        return PolicyOutcome(
            True, f"finalize: the feedback asks to ({turn.feedback!r})",
            summary=finalize_summary(turn.flight_plan, turn.map_metadata),
        )
    if turn.feedback and turn.feedback.strip():
        update, notes = feedback_update(turn.engine, turn.flight_plan, intent, cfg)
        if not update.is_empty():
            return PolicyOutcome(False, "follow feedback: " + "; ".join(notes), update)
        outcome = plan_turn(turn.engine, turn, cfg, estimate)
        outcome.reasoning = "; ".join(notes + [outcome.reasoning]) if notes else outcome.reasoning
        return outcome
    return plan_turn(turn.engine, turn, cfg, estimate)


def _tool_reasoning(calls: list[ToolCall]) -> str:
    """Why the offline model asks for tools (its own marker first: it counts its rounds by it)."""
    what = "; ".join(c.summary() for c in calls)
    return (f"{TOOL_TURN_PREFIX} locate the goal's terms and named identifiers in the code before the "
            f"survey: {what}")
