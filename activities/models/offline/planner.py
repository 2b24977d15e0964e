"""The ``offline`` text model: deterministic planning, criteria checks and summaries.

It writes the same canonical text formats an LLM is asked for, so the
activities parse its output with the same parsers (one code path). It reads
structured inputs from ``data`` (see :mod:`activities.planning`):

* ``planning.analyze``: DIRECT for short single-part goals, else an analysis of
  the top-ranked areas (``engine.rank``) ending ``REFLECT: yes`` for long goals;
* ``planning.review``: the three voices from the ranking;
* ``planning.plan``: one stage per top-ranked area (directory prefix), each
  with criteria naming that area's best files;
* ``stages.check_criteria``: paths / backticked identifiers of each criterion
  looked up in the rendered map's files and text (evidence quoted);
* ``stages.reflect``: KEEP when all met, else REWRITE with a first stage on the
  unmet criteria followed by the untouched remaining stages;
* ``navigator.compress``: a factual summary of the covered log entries.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from durable_navigator.navcore.compression import SummaryRequest
from durable_navigator.navtypes.errors import ModelError
from durable_navigator.navtypes.flightplan import FlightPlan
from durable_navigator.navtypes.mapmeta import FileSummary
from durable_navigator.navcore.planning import CriteriaCheck, PlanningConfig, Stage, StagePlan

__all__ = ["OfflinePlannerConfig", "OfflinePlanner", "criterion_evidence"]

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
_PATHLIKE = re.compile(r"`([^`]+)`|(?<![\w/])((?:[\w.\-]+/)+[\w.\-]*|[\w\-]+\.[A-Za-z]{1,5})(?![\w/])")
_LEVEL = re.compile(r"level\s*(\d)")
_STOP = frozenset(
    "the and for with from that this into what why how does are was were has have not but you your its "
    "which when where who all any can should would could about also then than there their them map shows "
    "shown level more code".split()
)
_MULTI = re.compile(r";|\band\b|\bthen\b|\balso\b|,", re.I)


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
    #: fraction of a free-text criterion's words that must appear in the map
    overlap_to_meet: float = Field(0.6, gt=0.0, le=1.0)


def _goal_words(goal: str) -> list[str]:
    return [w for w in _WORD.findall(goal.lower()) if w not in _STOP]


def _area(path: str, depth: int) -> str:
    parts = path.split("/")[:-1]
    return "/".join(parts[:depth]) if parts else "."


def _ranked_areas(engine: Any, goal: str, cfg: OfflinePlannerConfig) -> list[tuple[str, list[str]]]:
    ranked = engine.rank(FlightPlan(goal=goal[:8000]))[: cfg.ranked_files]
    areas: dict[str, list[str]] = {}
    for rf in ranked:
        areas.setdefault(_area(rf.path, cfg.area_depth), []).append(rf.path)
    return list(areas.items())


def criterion_evidence(
    criterion: str, files: Sequence[FileSummary], map_text: str, cfg: OfflinePlannerConfig
) -> tuple[bool, str]:
    """Deterministically check one criterion against the rendered map; (met, evidence)."""
    need = int(m.group(1)) if (m := _LEVEL.search(criterion)) else 2
    by_path = {f.path: f for f in files}
    tokens = [a or b for a, b in _PATHLIKE.findall(criterion)]
    if tokens:
        found, missing = [], []
        for tok in tokens:
            tok = tok.strip().rstrip("/")
            f = by_path.get(tok)
            if f is not None:
                (found if f.level >= need else missing).append(f"{tok} at L{f.level}")
            elif "/" in tok and any(p.startswith(tok + "/") and by_path[p].level >= need for p in by_path):
                found.append(f"files under {tok}/ at L{need}+")
            elif re.search(rf"\b{re.escape(tok)}\b", map_text):
                found.append(f"'{tok}' appears in the map")
            else:
                missing.append(f"{tok} not in the map")
        return (not missing, "; ".join(found + missing))
    words = {w for w in _goal_words(criterion)}
    if not words:
        return False, "criterion names nothing checkable in the map"
    present = sorted(w for w in words if w in map_text.lower())
    met = len(present) >= cfg.overlap_to_meet * len(words)
    return met, f"{len(present)}/{len(words)} key words in the map ({', '.join(present[:6])})"


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
        """The text answering ``task`` (a ``navcore.model`` task of a planning/stage/compress kind)."""
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
        for i, crit in enumerate(stage.success_criteria, 1):
            met, evidence = criterion_evidence(crit, d["files"], d["map_text"], self.config)
            lines.append(f"C{i}: {'MET' if met else 'NOT MET'} | {evidence}")
        return "\n".join(lines)

    def _reflect(self, d: dict[str, Any]) -> str:
        plan: StagePlan = d["plan"]
        done: int = d["completed_index"]
        check: CriteriaCheck = d["check"]
        if check.all_met:
            return "KEEP: every criterion of the stage is met; the remaining stages still apply."
        stage = plan.stages[done]
        retry = Stage(
            objective=f"Revisit stage {done + 1}: {stage.objective}"[:2000],
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
