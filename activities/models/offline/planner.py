"""The ``offline`` model's planning, criteria checks, reflection and summaries (deterministic).

It writes the same canonical text formats an LLM is asked for, so the model
activity parses its output with the same parsers (one code path). It reads the
request's typed task (``navcore.model``) and, for planning, the repository index:

* ``planning.analyze``: DIRECT for short single-part goals, else an analysis of
  the top-ranked areas (``engine.rank``) ending ``REFLECT: yes`` for long goals;
* ``planning.review``: the three voices from the ranking;
* ``planning.plan``: one stage per top-ranked area (directory prefix) — never an
  area the navigator's survey zooms out for this goal (tests, docs, … unless the
  goal asks) — each with criteria naming that area's best files;
* ``stages.check_criteria``: judged against the *goal*, never the criterion's
  wording (which the offline model cannot understand): the goal's terms found in
  the map must be shown at level 2+ (in the criterion's named files when it
  names some), with the evidence quoted;
* ``stages.reflect``: KEEP when all met, else REWRITE with a first stage on the
  unmet criteria followed by the untouched remaining stages;
* ``navigator.compress``: a factual summary of the covered log entries.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from durable_navigator.activities.models.offline.config import glob_matches, noise_excludes
from durable_navigator.activities.models.offline.terms import goal_terms, split_identifier
from durable_navigator.navcore.compression import SummaryRequest
from durable_navigator.navcore.planning import CriteriaCheck, PlanningConfig, Stage, StagePlan
from durable_navigator.navtypes.errors import ModelError
from durable_navigator.navtypes.flightplan import FlightPlan
from durable_navigator.navtypes.mapmeta import FileSummary

__all__ = ["OfflinePlannerConfig", "OfflinePlanner", "criterion_evidence", "named_files"]

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
_PATHLIKE = re.compile(r"`([^`]+)`|(?<![\w/])((?:[\w.\-]+/)+[\w.\-]*|[\w\-]+\.[A-Za-z]{1,5})(?![\w/])")
_STOP = frozenset(
    "the and for with from that this into what why how does are was were has have not but you your its "
    "which when where who all any can should would could about also then than there their them map shows "
    "shown level more code".split()
)
_MULTI = re.compile(r";|\band\b|\bthen\b|\balso\b|,", re.I)
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
    #: a criterion is met when this share of the goal's terms found in the map are shown at L2+
    goal_coverage_to_meet: float = Field(0.6, gt=0.0, le=1.0)


def _goal_words(goal: str) -> list[str]:
    return [w for w in _WORD.findall(goal.lower()) if w not in _STOP]


def _area(path: str, depth: int) -> str:
    parts = path.split("/")[:-1]
    return "/".join(parts[:depth]) if parts else "."


def _ranked_areas(engine: Any, goal: str, cfg: OfflinePlannerConfig) -> list[tuple[str, list[str]]]:
    """Top-ranked files grouped by area, without the areas the survey zooms out for this goal.

    The stages must be consistent with the map the navigator will build: the
    survey excludes noise (tests, docs, examples, ...) the goal does not mention,
    so a stage must never be planned there.
    """
    noise = noise_excludes(goal, engine.files)
    plan = FlightPlan(goal=goal[:8000], exclude=noise)
    ranked = [rf for rf in engine.rank(plan) if not any(glob_matches(g, rf.path) for g in noise)]
    areas: dict[str, list[str]] = {}
    for rf in ranked[: cfg.ranked_files]:
        areas.setdefault(_area(rf.path, cfg.area_depth), []).append(rf.path)
    return list(areas.items())


_SECTION = re.compile(r"^(\S+) \[L(\d)\b", re.M)


def _sections(map_text: str) -> dict[str, tuple[int, str]]:
    """``path -> (level, text)`` of each file section of a rendered map."""
    heads = list(_SECTION.finditer(map_text))
    out: dict[str, tuple[int, str]] = {}
    for i, m in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(map_text)
        out[m.group(1)] = (int(m.group(2)), map_text[m.start():end])
    return out


def _words(text: str) -> set[str]:
    """Lower-case words and identifier parts of ``text``."""
    found: set[str] = set()
    for word in _WORD.findall(text):
        found.add(word.lower())
        found.update(split_identifier(word))
    return found


def named_files(criteria: Sequence[str]) -> list[str]:
    """Paths (or folders) the criteria of a stage name: the stage's area."""
    return [tok.strip().rstrip("/") for c in criteria for a, b in _PATHLIKE.findall(c) for tok in [a or b]]


def criterion_evidence(
    goal: str, area: Sequence[str], files: Sequence[FileSummary], map_text: str, cfg: OfflinePlannerConfig,
    in_repository: Callable[[list[str], list[str] | None], set[str]] | None = None,
) -> tuple[bool, str]:
    """Judge the map against the goal, never against a criterion's wording; (met, evidence).

    The goal's terms the stage's ``area`` contains (the files its criteria name,
    or the whole repository when they name none; ``in_repository(terms, area)``
    asks the index — without an index, the terms anywhere in the map) are the
    ones that code can answer with; the stage is met when enough of them are
    *shown* — at level 2 or more (an outline or the source) — in that area.
    Hiding code therefore never makes a stage "met". The evidence says which goal
    terms are shown where, and which are missing.
    """
    terms = [t for t in goal_terms(goal) if len(t) >= 3]
    sections = _sections(map_text)
    shown = {path: _words(path + " " + text) for path, (level, text) in sections.items() if level >= 2}
    anywhere = _words(map_text)
    present = in_repository(terms, list(area) or None) if in_repository is not None else anywhere
    known = [t for t in terms if t in present]
    if not known:
        where = ("the stage's files" if area else "the repository") if in_repository is not None else "the map"
        return False, f"none of the goal's terms occur in {where}" + (f" ({', '.join(terms[:6])})" if terms else "")
    scope = {p: w for p, w in shown.items() if any(p == n or p.startswith(n + "/") for n in area)} if area else shown
    if not scope:
        return False, f"none of the stage's files ({', '.join(area[:4])}) is shown at L2+"
    where: dict[str, str] = {}
    for term in known:
        hit = next((p for p in sorted(scope) if term in scope[p]), None)
        if hit is not None:
            where[term] = hit
    met = len(where) >= cfg.goal_coverage_to_meet * len(known)
    shown_part = ", ".join(f"{t} ({p})" for t, p in list(where.items())[:6]) or "none"
    missing = [t for t in known if t not in where]
    tail = f"; not shown at L2+: {', '.join(missing[:6])}" if missing else ""
    return met, f"goal terms shown at L2+: {len(where)}/{len(known)} — {shown_part}{tail}"


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
        # one judgement per stage (the offline model cannot read a criterion's wording), quoted per criterion
        engine = d.get("engine")
        met, evidence = criterion_evidence(d["goal"], named_files(stage.success_criteria), d["files"],
                                           d["map_text"], self.config, engine.terms_in if engine is not None else None)
        lines = [f"C{i}: {'MET' if met else 'NOT MET'} | {evidence}" for i in range(1, len(stage.success_criteria) + 1)]
        return "\n".join(lines)

    def _reflect(self, d: dict[str, Any]) -> str:
        plan: StagePlan = d["plan"]
        done: int = d["completed_index"]
        check: CriteriaCheck = d["check"]
        if check.all_met:
            return "KEEP: every criterion of the stage is met; the remaining stages still apply."
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
