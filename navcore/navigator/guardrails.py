"""Guardrails for long explorations: deterministic, replay-safe, per-run profile.

Integration note (for ``workflows/navigator.py``)
-------------------------------------------------
State: keep one :class:`GuardrailState` in the workflow state (small: a
bounded window of observations). Each iteration::

    verdict = check_guardrails(profile, gstate, progress)    # before the decision
    # verdict.prompt_notes -> append to the user prompt (iteration budget,
    #   goal anchor, stage objective, loop / stall warnings)
    # verdict.stop_reason  -> finalize now with that reason ("loop_detected",
    #   "max_iterations", "activity_cap", "stalled")
    # verdict.end_stage    -> the stage's iteration cap is reached: run the
    #   criteria check / reflection and move on
    ... decide, apply, render ...
    gstate = record_iteration(profile, gstate, observe(step, decision, plan, metadata))

``progress.activities_used`` counts every activity the run has scheduled
(decide, render, tools, planning...) — the third safety layer. The functions
only read their arguments: no clock, randomness or I/O, so replays see the same
verdicts. :func:`map_quality` is the deterministic "better map" measure.
A :class:`RunProfile` is built from a YAML mapping by the worker/CLI
(``activities.planning.load_run_profile``) and travels in the workflow input.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from durable_navigator.navcore.model.model import StreamGuard
from durable_navigator.navcore.run.compression import CompressionConfig
from durable_navigator.navtypes.flightplan import FlightPlan, FlightPlanUpdate
from durable_navigator.navtypes.mapmeta import MapMetadata
from durable_navigator.navcore.planning.planning import PlanningConfig
from durable_navigator.navcore.model.routing import RoutingConfig
from durable_navigator.navcore.run.tools import ToolCall

__all__ = [
    "LoopConfig",
    "StallConfig",
    "SafetyConfig",
    "MapQualityConfig",
    "RunProfile",
    "Observation",
    "GuardrailState",
    "RunProgress",
    "GuardrailVerdict",
    "GuardStopReason",
    "plan_fingerprint",
    "tools_fingerprint",
    "decision_signature",
    "similarity",
    "map_quality",
    "observe",
    "record_iteration",
    "check_guardrails",
]

GuardStopReason = Literal["loop_detected", "max_iterations", "activity_cap", "stalled"]


class _Cfg(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LoopConfig(_Cfg):
    """Loop detection: the same flight plan or near-identical decisions repeating."""

    #: repeats (the latest included) that trigger a warning in the prompt
    warn_repeats: int = Field(3, ge=2, le=50)
    #: repeats that force a finalize with ``loop_detected`` (after the warning)
    stop_repeats: int = Field(4, ge=2, le=50)
    #: how many recent iterations are compared
    window: int = Field(8, ge=2, le=100)
    #: Jaccard similarity of decision word sets counted as "near-identical"
    similarity: float = Field(0.9, gt=0.0, le=1.0)

    def model_post_init(self, __context: object) -> None:
        if self.stop_repeats <= self.warn_repeats:
            raise ValueError("loop.stop_repeats must be above loop.warn_repeats (warning first)")
        if self.window < self.stop_repeats:
            raise ValueError("loop.window must be at least loop.stop_repeats")


class StallConfig(_Cfg):
    """Anti-stall: iterations without a better map."""

    warn_after: int = Field(5, ge=1, le=1000)
    #: optional forced finalize with ``stalled``; None = warnings only
    stop_after: int | None = Field(None, ge=1, le=1000)
    #: relative improvement of :func:`map_quality` that counts as "better"
    min_improvement: float = Field(0.01, ge=0.0, le=10.0)


class SafetyConfig(_Cfg):
    """The three safety layers."""

    max_iterations: int = Field(40, ge=1, le=10_000)
    max_stage_iterations: int = Field(10, ge=1, le=1000)
    #: every activity the run schedules counts (decide, render, tools, planning, ...)
    max_activities: int = Field(400, ge=10, le=100_000)


class MapQualityConfig(_Cfg):
    """Weights of :func:`map_quality` (score-weighted verbosity of the top files)."""

    #: weight of a file's level (index = level 0..4) in the quality sum
    level_weights: tuple[float, float, float, float, float] = (0.0, 0.1, 0.45, 0.7, 1.0)
    focused_bonus: float = Field(0.25, ge=0.0, le=10.0)
    #: weight of budget utilisation (tokens_used / token_budget) in the measure
    utilisation_weight: float = Field(0.2, ge=0.0, le=10.0)


class RunProfile(_Cfg):
    """Per-run guardrail, planning and compression settings (from a profile YAML)."""

    name: str = "default"
    #: show "iteration i of N" and what is left to the model
    show_iteration_budget: bool = True
    #: repeat the goal in the prompt every N iterations (0 = never)
    goal_anchor_every: int = Field(5, ge=0, le=1000)
    loop: LoopConfig = LoopConfig()
    stall: StallConfig = StallConfig()
    safety: SafetyConfig = SafetyConfig()
    quality: MapQualityConfig = MapQualityConfig()
    planning: PlanningConfig = PlanningConfig()
    compression: CompressionConfig = CompressionConfig()
    #: budget-aware model routing: which model answers which call as spending grows (navcore.model.routing)
    routing: RoutingConfig = RoutingConfig()
    #: first-chunk / inter-chunk timeouts of streaming model answers (None: navigator.yaml / env / defaults)
    stream: StreamGuard | None = None


class Observation(_Cfg):
    """What guardrails remember of one iteration (small, history-safe)."""

    step: int = Field(ge=0)
    action: str
    plan_fingerprint: str
    #: normalised words of the decision (reasoning + update), capped
    signature: str = Field("", max_length=2000)
    quality: float = 0.0


class GuardrailState(_Cfg):
    """Guardrail memory carried in workflow state (and across continue-as-new)."""

    window: list[Observation] = []
    best_quality: float = 0.0
    best_step: int = 0
    #: iterations since the map last got better
    since_improvement: int = 0


class RunProgress(_Cfg):
    """Where the run is, as the workflow knows it before the next decision."""

    goal: str
    #: the global iteration about to run (1-based)
    iteration: int = Field(ge=1)
    stage_index: int = Field(0, ge=0)
    stage_count: int = Field(1, ge=1)
    #: the iteration within the current stage about to run (1-based)
    stage_iteration: int = Field(1, ge=1)
    #: the current stage's own cap (None: only the profile's per-stage cap)
    stage_max_iterations: int | None = Field(None, ge=1)
    stage_objective: str | None = None
    activities_used: int = Field(0, ge=0)


class GuardrailVerdict(_Cfg):
    """What the workflow does with the guardrails' view of this iteration."""

    prompt_notes: list[str] = []
    warnings: list[str] = []
    stop_reason: GuardStopReason | None = None
    end_stage: bool = False
    loop_repeats: int = 0


_WORDS = re.compile(r"[a-z0-9_./*]+")


def plan_fingerprint(plan: FlightPlan) -> str:
    """A stable hash of a flight plan (the goal excluded: it does not change what is shown)."""
    body = json.dumps(plan.model_dump(mode="json", exclude={"goal"}), sort_keys=True)
    return hashlib.sha256(body.encode()).hexdigest()[:16]


def _tools_body(calls: list[ToolCall]) -> str:
    return json.dumps([c.model_dump(mode="json") for c in calls], sort_keys=True)


def tools_fingerprint(calls: list[ToolCall]) -> str:
    """A stable hash of a turn's tool calls (names and arguments, in order).

    A tool-only turn leaves the flight plan as it was, so its plan fingerprint
    would repeat the previous turn's; what it *does* is its calls.
    """
    return "tools:" + hashlib.sha256(_tools_body(calls).encode()).hexdigest()[:16]


def decision_signature(
    action: str, reasoning: str, updates: FlightPlanUpdate | None, tool_calls: list[ToolCall] | None = None
) -> str:
    """Normalised word set of what a decision *does*, for near-identical comparison.

    The action and the non-default fields of the update count; the reasoning
    only when there is no update (a model may repeat its explanation while its
    moves make progress, and unset update fields would make every decision
    look alike). A tool-only turn is its calls.
    """
    if tool_calls:
        body = _tools_body(tool_calls)
    elif updates is not None:
        body = json.dumps(updates.model_dump(mode="json", exclude_defaults=True), sort_keys=True)
    else:
        body = reasoning
    words = sorted(set(_WORDS.findall(f"{action} {body}".lower())))
    return " ".join(words)[:2000]


def similarity(a: str, b: str) -> float:
    """Jaccard similarity of two signatures (1.0 for two empty ones)."""
    sa, sb = set(a.split()), set(b.split())
    if not sa and not sb:
        return 1.0
    return len(sa & sb) / len(sa | sb)


def map_quality(meta: MapMetadata | None, config: MapQualityConfig = MapQualityConfig()) -> float:
    """Deterministic "how good is this map": ranked relevance shown verbosely, plus budget use.

    Sum over the map's top files of ``score * level_weight`` (+ a bonus for
    focused files), normalised by the total score, plus a utilisation term.
    """
    if meta is None:
        return 0.0
    total = sum(max(f.score, 0.0) for f in meta.top_files)
    covered = 0.0
    for f in meta.top_files:
        weight = config.level_weights[f.level] + (config.focused_bonus if f.focused and f.level >= 2 else 0.0)
        covered += (max(f.score, 0.0) if total > 0 else 1.0) * weight
    relevance = covered / (total if total > 0 else max(len(meta.top_files), 1))
    utilisation = min(meta.tokens_used / max(meta.token_budget, 1), 1.0)
    return round(relevance + config.utilisation_weight * utilisation, 9)


def observe(
    step: int,
    action: str,
    reasoning: str,
    updates: FlightPlanUpdate | None,
    plan: FlightPlan,
    meta: MapMetadata | None,
    profile: RunProfile,
    tool_calls: list[ToolCall] | None = None,
) -> Observation:
    """Build the observation of one finished iteration.

    With ``tool_calls`` (a ``call_tools`` turn) the fingerprint and signature
    are those of the calls: distinct tool turns are progress, not repeats of
    the unchanged plan, while the same call with the same arguments repeats.
    """
    return Observation(
        step=step,
        action=action,
        plan_fingerprint=tools_fingerprint(tool_calls) if tool_calls else plan_fingerprint(plan),
        signature=decision_signature(action, reasoning, updates, tool_calls),
        quality=map_quality(meta, profile.quality),
    )


def record_iteration(profile: RunProfile, state: GuardrailState, obs: Observation) -> GuardrailState:
    """Fold one observation into the state (bounded window, best map so far)."""
    window = [*state.window, obs][-profile.loop.window :]
    better = obs.quality > state.best_quality * (1.0 + profile.stall.min_improvement)
    if better or not state.window:
        return GuardrailState(window=window, best_quality=max(obs.quality, state.best_quality),
                              best_step=obs.step, since_improvement=0)
    return state.model_copy(update={"window": window, "since_improvement": state.since_improvement + 1})


def _loop_repeats(profile: RunProfile, state: GuardrailState) -> int:
    if not state.window:
        return 0
    last = state.window[-1]
    return sum(
        1
        for o in state.window
        if o.plan_fingerprint == last.plan_fingerprint
        or similarity(o.signature, last.signature) >= profile.loop.similarity
    )


def _budget_note(profile: RunProfile, p: RunProgress, stage_cap: int) -> str:
    left = profile.safety.max_iterations - p.iteration
    note = f"Iteration {p.iteration} of at most {profile.safety.max_iterations} ({left} left after this one)."
    if p.stage_count > 1 or p.stage_objective:
        note += f" Stage {p.stage_index + 1} of {p.stage_count}: iteration {p.stage_iteration} of {stage_cap}."
    if left == 0:
        note += " This is the last iteration: call finalize_context now."
    elif left <= 2:
        note += " Few iterations remain: prepare to finalize."
    return note


def check_guardrails(profile: RunProfile, state: GuardrailState, p: RunProgress) -> GuardrailVerdict:
    """The guardrails' verdict before iteration ``p.iteration`` (pure, deterministic)."""
    notes: list[str] = []
    warnings: list[str] = []
    stop: GuardStopReason | None = None
    stage_cap = min(p.stage_max_iterations or profile.safety.max_stage_iterations,
                    profile.safety.max_stage_iterations)
    if p.iteration > profile.safety.max_iterations:
        stop = "max_iterations"
    elif p.activities_used >= profile.safety.max_activities:
        stop = "activity_cap"
    if profile.show_iteration_budget:
        notes.append(_budget_note(profile, p, stage_cap))
    every = profile.goal_anchor_every
    if every and p.iteration > 1 and (p.iteration - 1) % every == 0:
        anchor = f"GOAL ANCHOR: stay on the goal — {p.goal.strip()}"
        if p.stage_objective:
            anchor += f" | current stage objective: {p.stage_objective}"
        notes.append(anchor)
    repeats = _loop_repeats(profile, state)
    if repeats >= profile.loop.stop_repeats and stop is None:
        stop = "loop_detected"
    elif repeats >= profile.loop.warn_repeats:
        warnings.append(
            f"LOOP WARNING: the same flight plan, the same tool call or a near-identical decision came "
            f"{repeats} times in "
            f"the last {len(state.window)} iterations. Change approach or call finalize_context; "
            "one more repeat finalizes the run."
        )
    since = state.since_improvement
    if profile.stall.stop_after is not None and since >= profile.stall.stop_after and stop is None:
        stop = "stalled"
    elif since >= profile.stall.warn_after and since % profile.stall.warn_after == 0:
        warnings.append(
            f"STALL WARNING: {since} iterations without a better map (best at step {state.best_step}). "
            "Zoom into different code or call finalize_context."
        )
    return GuardrailVerdict(
        prompt_notes=notes + warnings,
        warnings=warnings,
        stop_reason=stop,
        end_stage=p.stage_iteration > stage_cap,
        loop_repeats=repeats,
    )
