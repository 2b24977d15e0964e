"""Planning phase and stages: models and pure plan operations.

The planning phase is three model calls (tasks ``planning.analyze``,
``planning.review``, ``planning.plan``; see :mod:`navcore.navigator.model_calls` for
their prompt specs and typed results): a DIRECT analysis skips planning and
runs one implicit stage (:func:`direct_plan`); otherwise the
:class:`StagePlan` has 1..8 stages (hard cap, compound steps split). When a
stage ends, ``stages.check_criteria`` gives a :class:`CriteriaCheck` and
``stages.reflect`` a :class:`Reflection`, which :func:`apply_reflection` applies
to the remaining stages. :func:`criteria_log_fields` /
:func:`reflection_log_fields` give the decision-log entries; :func:`plan_markdown`
renders the plan and the criteria status for the Web UI, the CLI and the
context pack.

Everything here is pure pydantic + stdlib: safe in the workflow sandbox.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from durable_navigator.navcore.planning.criteria import CriterionStatus, verdict_counts, verdict_mark, verdict_word
from durable_navigator.navtypes.errors import ModelError

__all__ = [
    "PlanParseError",
    "PlanningConfig",
    "Stage",
    "StagePlan",
    "PlanningAnalysis",
    "PlanReview",
    "CriterionStatus",
    "CriteriaCheck",
    "Reflection",
    "direct_plan",
    "apply_reflection",
    "plan_markdown",
    "criteria_log_fields",
    "reflection_log_fields",
]

#: absolute ceiling on stages, whatever a profile says (the issue's hard cap)
HARD_MAX_STAGES = 8


class PlanParseError(ModelError):
    """A model's planning text could not be parsed; the message says what was expected."""

    kind = "PlanParseError"


class PlanningConfig(BaseModel):
    """Knobs of the planning phase (part of the run profile)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: run the planning phase at all (off -> one implicit stage)
    enabled: bool = True
    #: run the critic/pragmatist/detailer review when the analysis asks for it
    review: bool = False
    max_stages: int = Field(HARD_MAX_STAGES, ge=1, le=HARD_MAX_STAGES)
    #: iterations a stage gets when the plan does not say
    default_stage_iterations: int = Field(5, ge=1, le=100)
    #: ceiling for a stage's own ``max_iterations`` request
    max_stage_iterations: int = Field(10, ge=1, le=100)
    max_criteria_per_stage: int = Field(5, ge=1, le=20)
    #: output token cap of each planning call (also what the ledger reserves)
    max_output_tokens: int = Field(2048, ge=64, le=65_536)
    #: characters of the goal-relevant map excerpt put into planning prompts
    map_excerpt_chars: int = Field(12_000, ge=500, le=400_000)


_Text = Annotated[str, Field(min_length=1, max_length=2000)]


class Stage(BaseModel):
    """One stage: an objective, checkable success criteria, an iteration cap."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    objective: _Text
    success_criteria: Annotated[list[_Text], Field(min_length=1, max_length=20)]
    max_iterations: int = Field(5, ge=1, le=100)


class StagePlan(BaseModel):
    """The ordered stages of one exploration (1..8)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    stages: Annotated[list[Stage], Field(min_length=1, max_length=HARD_MAX_STAGES)]
    #: True when the analysis said DIRECT and this is the implicit single stage
    direct: bool = False
    #: stages dropped by the hard cap (visible, never silent)
    dropped_stages: int = Field(0, ge=0)
    #: compound objectives that were split into several stages
    split_stages: int = Field(0, ge=0)
    #: why this plan is a fallback (a planning call failed), shown wherever the plan is
    fallback: str | None = Field(None, max_length=600)
    #: the one direct stage spans the whole run: the run's iteration cap applies, not the
    #: profile's per-stage cap (False in plans made before this field existed)
    whole_run: bool = False


class PlanningAnalysis(BaseModel):
    """Result of the analysis step: DIRECT, or an analysis ending ``REFLECT: yes|no``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    direct: bool
    analysis: str = Field("", max_length=20_000)
    reflect: bool = False


class PlanReview(BaseModel):
    """The three-voice review of an analysis, plus the adjustments it implies."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    critic: str = Field(max_length=8000)
    pragmatist: str = Field(max_length=8000)
    detailer: str = Field(max_length=8000)
    adjustments: list[Annotated[str, Field(max_length=2000)]] = []


class CriteriaCheck(BaseModel):
    """Criteria status of one stage after its iterations."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    stage_index: int = Field(ge=0)
    results: list[CriterionStatus]

    @property
    def all_met(self) -> bool:
        """True when every criterion of the stage is met (an unchecked one is not)."""
        return all(r.met for r in self.results)

    @property
    def unmet(self) -> list[str]:
        """The criteria checked and found not met, in plan order (unchecked ones are not among them:
        redoing a stage would not check them)."""
        return [r.criterion for r in self.results if r.status == "not_met"]

    @property
    def unchecked(self) -> list[str]:
        """The criteria the checker could not check, in plan order."""
        return [r.criterion for r in self.results if r.unchecked]


class Reflection(BaseModel):
    """Keep the remaining stages, or rewrite them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    action: Literal["keep", "rewrite"]
    reasoning: str = Field("", max_length=8000)
    #: the new remaining stages (``rewrite`` only; may be empty = stop after this stage)
    remaining_stages: list[Stage] = []


# --------------------------------------------------------------------------- activity I/O


def direct_plan(goal: str, config: PlanningConfig = PlanningConfig(), run_iterations: int | None = None) -> StagePlan:
    """The implicit single stage of a DIRECT goal (or of ``planning="direct"``).

    With ``run_iterations`` the stage spans the whole run (``whole_run``): a
    DIRECT goal must not end sooner than the same run without planning would.
    """
    stage = Stage(
        objective=_clip(f"Answer the goal directly: {goal}"),
        success_criteria=["The map shows the code that answers the goal in detail (level 2 or more)."],
        max_iterations=min(run_iterations, 100) if run_iterations else config.max_stage_iterations,
    )
    return StagePlan(stages=[stage], direct=True, whole_run=run_iterations is not None)


def apply_reflection(
    plan: StagePlan, completed_index: int, reflection: Reflection, config: PlanningConfig
) -> StagePlan:
    """Return ``plan`` with the stages after ``completed_index`` rewritten.

    Completed stages are history and never change; the rewritten tail is cut
    so the whole plan stays within ``config.max_stages`` (the cut is counted in
    ``dropped_stages``).
    """
    if not 0 <= completed_index < len(plan.stages):
        raise ValueError(f"completed_index {completed_index} outside plan of {len(plan.stages)} stages")
    if reflection.action == "keep":
        return plan
    done = list(plan.stages[: completed_index + 1])
    room = max(0, config.max_stages - len(done))
    tail = list(reflection.remaining_stages)
    kept = tail[:room]
    return StagePlan(
        stages=done + kept,
        direct=False,
        dropped_stages=plan.dropped_stages + (len(tail) - len(kept)),
        split_stages=plan.split_stages,
    )


def plan_markdown(
    plan: StagePlan, checks: dict[int, CriteriaCheck] | None = None, current: int | None = None
) -> str:
    """Markdown of the plan with criteria status, for the Web UI, the CLI and the context pack."""
    checks = checks or {}
    lines = ["### Plan" + (" (direct)" if plan.direct else f" ({len(plan.stages)} stages)")]
    for i, stage in enumerate(plan.stages):
        marker = " ← current" if current == i else ""
        lines.append(f"{i + 1}. **{stage.objective}** (max {stage.max_iterations} iterations){marker}")
        status = {r.criterion: r for r in checks[i].results} if i in checks else {}
        for crit in stage.success_criteria:
            r = status.get(crit)
            if r is None:
                lines.append(f"   - [ ] {crit}")
                continue
            word = " — unchecked" if r.unchecked else ""
            lines.append(f"   - {verdict_mark(r.status)} {crit}{word}{_verdict_tail(r)}")
    if any(r.unchecked for c in checks.values() for r in c.results):
        lines.append("_[x] met · [!] not met · [?] unchecked: the checker could not verify it, so it is "
                     "claimed neither way._")
    if plan.dropped_stages:
        lines.append(f"_{plan.dropped_stages} stage(s) dropped by the stage cap._")
    if plan.fallback:
        lines.append(f"_Fallback: {plan.fallback}_")
    return "\n".join(lines)


def criteria_log_fields(check: CriteriaCheck, stage: Stage) -> dict[str, object]:
    """``action``/``reasoning``/``diff_lines`` of the decision-log entry recording a criteria check."""
    counts = verdict_counts(check.results)
    unchecked = f", {counts['unchecked']} unchecked" if counts["unchecked"] else ""
    return {
        "action": "criteria_check",
        "reasoning": _clip(f"stage {check.stage_index + 1} '{stage.objective}': "
                           f"{counts['met']}/{len(check.results)} criteria met{unchecked}"),
        "diff_lines": [_clip(f"{verdict_word(r.status)}: {r.criterion}{_verdict_tail(r)}", 300) for r in check.results],
    }


def _verdict_tail(r: CriterionStatus) -> str:
    """`` — evidence (note)`` of one verdict (empty when it has neither)."""
    ev = f" — {', '.join(r.evidence)}" if r.evidence else ""
    return ev + (f" ({r.note})" if r.note else "")


def reflection_log_fields(reflection: Reflection, completed_index: int) -> dict[str, object]:
    """``action``/``reasoning``/``diff_lines`` of the decision-log entry recording a reflection."""
    if reflection.action == "keep":
        lines = ["remaining stages kept"]
    else:
        lines = [f"+ stage: {s.objective}" for s in reflection.remaining_stages] or ["no more stages"]
    return {
        "action": "reflection",
        "reasoning": _clip(f"after stage {completed_index + 1}: {reflection.action}. {reflection.reasoning}"),
        "diff_lines": [_clip(line, 300) for line in lines[:8]],
    }


def _clip(text: str, limit: int = 2000) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
