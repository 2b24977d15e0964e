"""The ``offline`` model's planning, criteria checks, reflection and summaries (deterministic).

It writes the same canonical text formats an LLM is asked for, so the model
activity parses its output with the same parsers (one code path). It reads the
request's typed task (``navcore.model.model``) and, for planning, the repository index:

* ``planning.analyze``: DIRECT for short single-part goals, else an analysis of
  the top-ranked areas (``engine.rank``) ending ``REFLECT: yes`` for long goals;
* ``planning.review``: the three voices from the ranking;
* ``planning.plan``: one stage per top-ranked area (directory prefix) among the
  files the goal's search found something in — never an area the navigator's
  survey zooms out for this goal (tests, docs, … unless the goal asks) nor a hidden
  tooling folder (``.devcontainer/``) it does not name — each with criteria naming
  that area's best files;
* ``stages.check_criteria``: a criterion about the map (a path or a name shown
  at a level, a file in focus — what this planner's own criteria say) is checked
  against the render (:mod:`navcore.navigator.map_criteria`); any other criterion is
  UNCHECKED — the offline model cannot read it, and word overlap between the goal
  and the map is no check of it;
* ``stages.reflect``: KEEP when no criterion was found unmet, else REWRITE with a
  first stage on the unmet criteria followed by the untouched remaining stages;
* ``navigator.compress``: a factual summary of the covered log entries.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from durable_navigator.activities.models.offline.config import glob_matches, noise_excludes
from durable_navigator.activities.models.offline.research_exec import is_noise
from durable_navigator.navcore.run.compression import SummaryRequest
from durable_navigator.navcore.navigator.map_criteria import check_map_criterion
from durable_navigator.navcore.planning.planning import CriteriaCheck, PlanningConfig, Stage, StagePlan
from durable_navigator.navtypes.errors import ModelError
from durable_navigator.navtypes.flightplan import FlightPlan

__all__ = ["OfflinePlannerConfig", "OfflinePlanner"]

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
_STOP = frozenset(
    "the and for with from that this into what why how does are was were has have not but you your its "
    "which when where who all any can should would could about also then than there their them map shows "
    "shown level more code".split()
)
#: ranking signals that come from the goal itself (not the reference graph): a file's goal evidence
_EVIDENCE = ("bm25", "ident", "path", "name")
_MULTI = re.compile(r";|\band\b|\bthen\b|\balso\b|,", re.I)
_CANNOT_CHECK = ("the offline model checks only criteria about the map (a path or a name shown at a level, a "
                 "file in focus); it cannot tell whether this one holds")
#: how the reflection titles the retry of a stage whose criteria were unmet (one retry per stage)
_REVISIT = "Revisit stage"


class OfflinePlannerConfig(BaseModel):
    """Knobs of the deterministic planner."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: goals with at most this many words and a single part are DIRECT
    direct_max_words: int = Field(12, ge=1)
    #: goals with at least this many words ask for a review (REFLECT: yes)
    reflect_min_words: int = Field(25, ge=1)
    #: directory components that make one "area"
    area_depth: int = Field(2, ge=1, le=6)
    #: ranked files considered when grouping areas
    ranked_files: int = Field(40, ge=1)
    #: criteria (files) per stage
    files_per_stage: int = Field(2, ge=1, le=10)
    #: goal words per extra stage (depth adapts to the goal)
    words_per_stage: int = Field(6, ge=1)


def _goal_words(goal: str) -> list[str]:
    return [w for w in _WORD.findall(goal.lower()) if w not in _STOP]


def _area(path: str, depth: int) -> str:
    parts = path.split("/")[:-1]
    return "/".join(parts[:depth]) if parts else "."


def _ranked_areas(engine: Any, goal: str, cfg: OfflinePlannerConfig) -> list[tuple[str, list[str]]]:
    """Top-ranked files *with goal evidence*, grouped by area, without noise or tooling areas.

    The stages must be consistent with the map the navigator will build: the
    survey excludes noise (tests, docs, examples, ...) the goal does not mention,
    so a stage must never be planned there; nor in a hidden tooling folder
    (``.devcontainer/``) the goal does not name. And a file counts for an area only
    when the goal's search found something in it (a lexical, identifier, path or
    name signal): a file ranked by the graph alone says nothing about the goal, and
    an area made of such files would be a stage about nothing the goal asked.
    """
    noise = noise_excludes(goal, engine.files)
    plan = FlightPlan(goal=goal[:8000], exclude=noise)
    ranked = [rf for rf in engine.rank(plan) if not any(glob_matches(g, rf.path) for g in noise)
              and not is_noise(rf.path, goal) and any(rf.signals.get(k, 0.0) > 0 for k in _EVIDENCE)]
    areas: dict[str, list[str]] = {}
    for rf in ranked[: cfg.ranked_files]:
        areas.setdefault(_area(rf.path, cfg.area_depth), []).append(rf.path)
    return list(areas.items())


def _stage_text(n: int, stage: Stage) -> str:
    crit = "\n".join(f"- {c}" for c in stage.success_criteria)
    return f"STAGE {n}: {stage.objective}\n{crit}\nMAX_ITERATIONS: {stage.max_iterations}"


class OfflinePlanner:
    """Deterministic planning, stage checks, reflection and summaries (no network).

    Each method answers one typed task with the canonical text an LLM is asked
    for, so the same parsers read both.
    """

    def __init__(self, config: OfflinePlannerConfig = OfflinePlannerConfig()) -> None:
        self.config = config

    def answer(self, task: Any, engine: Any) -> str:
        """The text answering ``task`` (a ``navcore.model.model`` task of a planning/stage/compress kind)."""
        handler = {
            "planning.analyze": self._analyze,
            "planning.review": self._review,
            "planning.plan": self._plan,
            "stages.check_criteria": self._criteria,
            "stages.reflect": self._reflect,
            "navigator.compress": self._compress,
        }.get(task.kind)
        if handler is None:
            raise ModelError(f"the offline model has no behaviour for {task.kind!r}; use a known task kind")
        data = {**{k: getattr(task, k) for k in type(task).model_fields}, "engine": engine}
        return handler(data)

    def _analyze(self, d: dict[str, Any]) -> str:
        goal: str = d["goal"]
        words = goal.split()
        if len(words) <= self.config.direct_max_words and not _MULTI.search(goal):
            return "DIRECT: a short single-part goal; explore it without a staged plan."
        areas = _ranked_areas(d["engine"], goal, self.config)
        listing = "\n".join(f"- {a}/: {', '.join(fs[:3])}" for a, fs in areas[:6]) or "- (no ranked files)"
        reflect = "yes" if len(words) >= self.config.reflect_min_words else "no"
        return f"The goal spans several parts. Top-ranked areas:\n{listing}\nREFLECT: {reflect}"

    def _review(self, d: dict[str, Any]) -> str:
        areas = _ranked_areas(d["engine"], d["goal"], self.config)
        top = areas[0][0] if areas else "."
        files = [f for _, fs in areas[:3] for f in fs[:2]]
        return (
            "CRITIC: the ranking is lexical and graph-based; goal words absent from the code may hide "
            "the relevant area.\n"
            f"PRAGMATIST: start with {top}/, the best-ranked area, and stop once it explains the goal.\n"
            f"DETAILER: inspect {', '.join(files) or 'the top-ranked files'}.\n"
            "ADJUSTMENTS:\n" + "\n".join(f"- make sure `{f}` is shown at level 2 or more" for f in files[:3])
        )

    def _plan(self, d: dict[str, Any]) -> str:
        cfg: PlanningConfig = d["config"]
        goal: str = d["goal"]
        areas = _ranked_areas(d["engine"], goal, self.config)
        if not areas:
            return f"STAGE 1: Find the code relevant to: {goal[:200]}\n- The map shows code matching the goal words"
        depth = 1 + len(_goal_words(goal)) // self.config.words_per_stage
        n = max(1, min(depth, cfg.max_stages, len(areas)))
        iters = min(cfg.default_stage_iterations, cfg.max_stage_iterations)
        blocks = []
        for i, (area, files) in enumerate(areas[:n], 1):
            crit = "\n".join(f"- `{f}` is shown at level 2 or more" for f in files[: self.config.files_per_stage])
            blocks.append(f"STAGE {i}: Inspect the {area}/ area for the goal\n{crit}\nMAX_ITERATIONS: {iters}")
        return "\n\n".join(blocks)

    def _criteria(self, d: dict[str, Any]) -> str:
        stage: Stage = d["stage"]
        lines = []
        for i, criterion in enumerate(stage.success_criteria, 1):
            checked = check_map_criterion(criterion, d["files"], d["map_text"])
            if checked is None:
                # the offline model cannot read what the criterion asks; word overlap with the goal or the
                # map is no check of it, so it claims nothing
                lines.append(f"C{i}: UNCHECKED | {_CANNOT_CHECK}")
            else:
                verdict = {"met": "MET", "not_met": "NOT MET", "unchecked": "UNCHECKED"}[checked.status]
                lines.append(f"C{i}: {verdict} | {', '.join(checked.evidence) or checked.note}")
        return "\n".join(lines)

    def _reflect(self, d: dict[str, Any]) -> str:
        plan: StagePlan = d["plan"]
        done: int = d["completed_index"]
        check: CriteriaCheck = d["check"]
        if not check.unmet:
            # unchecked criteria are not failures: a revisit would not check them either
            why = "every criterion of the stage is met" if check.all_met else (
                f"no criterion was found unmet ({len(check.unchecked)} unchecked)")
            return f"KEEP: {why}; the remaining stages still apply."
        stage = plan.stages[done]
        if stage.objective.startswith(_REVISIT):
            # the offline navigator is deterministic: a second revisit would end where this one did
            return (f"KEEP: {len(check.unmet)} criteria still unmet after a revisit; another revisit "
                    "would repeat it, so the remaining stages go on.")
        retry = Stage(
            objective=f"{_REVISIT} {done + 1}: {stage.objective}"[:2000],
            success_criteria=check.unmet,
            max_iterations=stage.max_iterations,
        )
        rest = [retry, *plan.stages[done + 1 :]]
        body = "\n\n".join(_stage_text(i, s) for i, s in enumerate(rest, 1))
        return f"REWRITE: {len(check.unmet)} criteria unmet; revisit them before moving on.\n\n{body}"

    def _compress(self, d: dict[str, Any]) -> str:
        req: SummaryRequest = d["request"]
        actions = Counter(e.action for e in req.entries)
        diffs = Counter(line for e in req.entries if e.action not in ("summary", "trimmed") for line in e.diff_lines)
        prior = [e.reasoning[:400] for e in req.entries if e.action in ("summary", "trimmed")]
        cost = sum(e.cost_micros for e in req.entries)
        parts = [
            f"Steps {req.first_step}-{req.last_step}: {len(req.entries)} entries "
            f"({', '.join(f'{a} x{c}' for a, c in sorted(actions.items()))}); cost {cost} micro-USD.",
        ]
        if prior:
            parts.append("Earlier: " + " / ".join(prior))
        if diffs:
            parts.append("Most frequent changes: " + "; ".join(f"{k} (x{v})" for k, v in diffs.most_common(5)))
        last = next((e for e in reversed(req.entries) if e.action not in ("summary", "trimmed")), None)
        if last is not None:
            parts.append(f"Last reasoning (step {last.step}): {last.reasoning[:300]}")
        return "\n".join(parts)
