"""The ``offline`` model: the embedded default navigator when no API key is set.

A deterministic policy over the repo-map index (lexical BM25 + reference-graph
ranking from ``repomap``, plus BM25 over symbol bodies) that makes real zoom-in /
zoom-out decisions with human-readable reasons and finalizes when the budget is
well used and the ranking is stable. No network; same inputs -> same decision.
It costs nothing (model ``offline`` is priced at 0): usage is zero tokens and
``calls=1``. The policy itself lives in ``offline_policy`` / ``offline_diff`` /
``offline_symbols``; how feedback is obeyed is in ``offline_feedback``; its one
round of code tools (first turn, then hints for the survey) is in ``offline_tools``.
"""

from __future__ import annotations

import asyncio

from durable_navigator.activities.models.base import DecideCall
from durable_navigator.activities.models.offline_feedback import feedback_update
from durable_navigator.activities.models.offline_policy import OfflinePolicyConfig, PolicyOutcome, plan_turn
from durable_navigator.activities.models.offline_terms import parse_feedback
from durable_navigator.activities.models.offline_tools import TOOL_TURN_PREFIX, tool_round
from durable_navigator.navcore.decision import ModelDecision, TokenUsage
from durable_navigator.navcore.errors import ModelError
from durable_navigator.navcore.tools import ToolCall

__all__ = ["OFFLINE_MODEL", "OfflineProvider"]

OFFLINE_MODEL = "offline"


class OfflineProvider:
    """``ModelProvider`` for the model name ``offline``."""

    def __init__(self, config: OfflinePolicyConfig | None = None) -> None:
        self.config = config or OfflinePolicyConfig()

    def handles(self, model: str) -> bool:
        """Only the exact name ``offline``."""
        return model == OFFLINE_MODEL

    async def decide(self, call: DecideCall) -> ModelDecision:
        """One decision; the index work runs in a thread so the activity can heartbeat."""
        call.heartbeat("offline policy: ranking")
        decision = await asyncio.to_thread(self.decide_sync, call)
        call.heartbeat(f"offline policy: {decision.action}")
        return decision

    def decide_sync(self, call: DecideCall) -> ModelDecision:
        """The same decision, synchronously (used by the benchmark loop)."""
        if call.engine is None:
            raise ModelError(
                "the offline model needs the repo-map engine: open repomap.RepoMap on the repository "
                "and pass it as DecideCall.engine"
            )
        from durable_navigator.repomap.tokens import estimate_tokens

        calls = self._tool_round(call)
        if calls:
            return ModelDecision(
                action="call_tools", reasoning=_tool_reasoning(calls), tool_calls=calls,
                model=OFFLINE_MODEL, usage=TokenUsage(), calls=1,
            )
        outcome = self._outcome(call, estimate_tokens)
        if outcome.finalize:
            return ModelDecision(
                action="finalize_context", reasoning=outcome.reasoning,
                summary=outcome.summary or outcome.reasoning, model=OFFLINE_MODEL,
                usage=TokenUsage(), calls=1,
            )
        return ModelDecision(
            action="update_flight_plan", reasoning=outcome.reasoning, updates=outcome.update,
            model=OFFLINE_MODEL, usage=TokenUsage(), calls=1,
        )

    def _tool_round(self, call: DecideCall) -> list[ToolCall]:
        """The first turn's code-tool calls (see ``offline_tools``), when the caller can run them."""
        if not call.tools_available or (call.feedback and call.feedback.strip()):
            return []
        goal = call.goal or call.flight_plan.goal or ""
        return tool_round(goal, call.flight_plan, call.iteration, call.max_iterations, call.recent_decisions,
                          self.config.tools)

    def _outcome(self, call: DecideCall, estimate: object) -> PolicyOutcome:
        from durable_navigator.activities.models.offline_diff import finalize_summary

        intent = parse_feedback(call.feedback)
        if intent.finalize and not (intent.mentions or intent.ignores or intent.less or intent.more):
            return PolicyOutcome(
                True, f"finalize: the feedback asks to ({call.feedback!r})",
                summary=finalize_summary(call.flight_plan, call.map_metadata),
            )
        if call.feedback and call.feedback.strip():
            update, notes = feedback_update(call.engine, call.flight_plan, intent, self.config)
            if not update.is_empty():
                return PolicyOutcome(False, "follow feedback: " + "; ".join(notes), update)
            turn = plan_turn(call.engine, call, self.config, estimate)
            turn.reasoning = "; ".join(notes + [turn.reasoning]) if notes else turn.reasoning
            return turn
        return plan_turn(call.engine, call, self.config, estimate)


def _tool_reasoning(calls: list[ToolCall]) -> str:
    """Why the offline model asks for tools (its own marker first: it counts its rounds by it)."""
    what = "; ".join(c.summary() for c in calls)
    return (f"{TOOL_TURN_PREFIX} locate the goal's terms and named identifiers in the code before the "
            f"survey: {what}")
