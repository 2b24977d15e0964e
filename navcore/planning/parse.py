"""Parsers for the planning-phase text a model writes.

The prompts (:mod:`navcore.planning.prompts`) ask for one canonical format,
but models drift: markdown emphasis, numbered lists instead of ``STAGE n``,
JSON in a code fence. Each parser accepts those variants and otherwise raises
:class:`~navcore.planning.planning.PlanParseError` with one line saying what was
expected — the activity feeds that line back in its one corrective re-ask.

Canonical formats::

    DIRECT                      |  <analysis ...>
                                |  REFLECT: yes

    STAGE 1: <objective>
    - <success criterion>
    MAX_ITERATIONS: 4

    C1: MET | <evidence>        (criteria check, one line per criterion)
    KEEP | REWRITE + stages     (reflection)
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from durable_navigator.navcore.planning.planning import (
    CriteriaCheck,
    CriterionStatus,
    PlanningAnalysis,
    PlanningConfig,
    PlanParseError,
    PlanReview,
    Reflection,
    Stage,
    StagePlan,
)

__all__ = [
    "parse_analysis",
    "parse_review",
    "parse_stage_list",
    "parse_stage_plan",
    "parse_criteria_check",
    "parse_reflection",
    "split_compound",
]

_DECOR = re.compile(r"^[\s>#*_`]+|[\s*_`]+$")
_REFLECT = re.compile(r"\bREFLECT\b\s*[:=\-]?\s*\**\s*(yes|no|true|false)\b", re.I)
_STAGE_HDR = re.compile(r"^\s*[#*\s]*stage\s*(\d+)\s*\**\s*[:.)\-—]?\s*\**\s*(.*)$", re.I)
_NUM_HDR = re.compile(r"^(\d+)\s*[.)]\s+(.*)$")
_BULLET = re.compile(r"^\s*(?:[-*•+]|\d+[.)]|[a-z][.)])\s+(.*)$")
_MAXIT = re.compile(r"max(?:imum)?[_ \-]?iter(?:ation)?s?\s*[:=]?\s*(\d+)", re.I)
_MAXIT_INLINE = re.compile(r"\(\s*max(?:imum)?\s*(\d+)\s*iter(?:ation)?s?\s*\)", re.I)
_LABEL = re.compile(r"^\s*[*_]*\s*(success\s*criteria|criteria|objective)\s*[*_]*\s*:\s*(.*)$", re.I)
_COMPOUND = re.compile(r"\s*;\s*(?:and\s+)?(?:then\s+)?|,?\s+and then\s+|,\s*then\s+|\s+then\s+", re.I)
_WORD = re.compile(r"[a-z0-9_]{3,}")


def _clean(line: str) -> str:
    return _DECOR.sub("", line).strip()


def _meaningful_lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if _clean(ln)]


def _strip_fence(text: str) -> str:
    m = re.search(r"```(?:json|yaml)?\s*\n(.*?)```", text, re.S)
    return m.group(1) if m else text


# --------------------------------------------------------------------------- analysis / review


def parse_analysis(text: str) -> PlanningAnalysis:
    """``DIRECT`` (optionally with a reason) or an analysis ending ``REFLECT: yes|no``."""
    lines = _meaningful_lines(text or "")
    if not lines:
        raise PlanParseError("the analysis was empty; answer 'DIRECT' or an analysis ending 'REFLECT: yes|no'")
    first = _clean(lines[0].replace("*", ""))
    if re.match(r"^DIRECT\b", first, re.I):
        rest = re.sub(r"^DIRECT\b\s*[:.\-—]?\s*", "", first, flags=re.I)
        return PlanningAnalysis(direct=True, analysis="\n".join([rest, *lines[1:]]).strip())
    matches = list(_REFLECT.finditer(text))
    if not matches:
        raise PlanParseError(
            "the analysis did not end with 'REFLECT: yes' or 'REFLECT: no' (and was not 'DIRECT'); add that line"
        )
    reflect = matches[-1].group(1).lower() in ("yes", "true")
    body = "\n".join(ln for ln in lines if not _REFLECT.search(ln)).strip()
    return PlanningAnalysis(direct=False, analysis=body[:20_000], reflect=reflect)


_REVIEW_HDR = re.compile(
    r"^\s*[#*\s]*(critic|pragmatist|detailer|(?:plan\s+)?adjustments)\s*[*]*\s*[:\-—]?\s*[*]*\s*(.*)$", re.I
)


def parse_review(text: str) -> PlanReview:
    """Sections ``CRITIC:``, ``PRAGMATIST:``, ``DETAILER:`` and optional ``ADJUSTMENTS:`` (bullets)."""
    sections: dict[str, list[str]] = {}
    current: str | None = None
    for line in (text or "").splitlines():
        m = _REVIEW_HDR.match(line)
        if m:
            current = m.group(1).lower().split()[-1]
            sections.setdefault(current, [])
            if m.group(2).strip():
                sections[current].append(m.group(2).strip())
        elif current is not None and line.strip():
            sections[current].append(line.strip())
    missing = [s.upper() for s in ("critic", "pragmatist", "detailer") if not sections.get(s)]
    if missing:
        raise PlanParseError(f"the review lacks section(s) {', '.join(missing)}; write each as 'NAME: text'")
    adjustments = []
    for line in sections.get("adjustments", []):
        m = _BULLET.match(line)
        item = (m.group(1) if m else line).strip()
        if item and item.lower() not in ("none", "n/a", "-"):
            adjustments.append(item[:2000])
    return PlanReview(
        critic="\n".join(sections["critic"])[:8000],
        pragmatist="\n".join(sections["pragmatist"])[:8000],
        detailer="\n".join(sections["detailer"])[:8000],
        adjustments=adjustments,
    )


# --------------------------------------------------------------------------- stage lists


@dataclass
class _Draft:
    objective: str
    criteria: list[str] = field(default_factory=list)
    max_iterations: int | None = None


def _json_iterations(item: dict[str, object]) -> int | None:
    raw = item.get("max_iterations")
    if raw is None or raw == "":
        return None
    try:
        return int(str(raw).strip())
    except ValueError:
        raise PlanParseError(f"max_iterations must be a whole number, got {str(raw)[:40]!r}") from None


def _stages_from_json(text: str) -> list[_Draft] | None:
    body = _strip_fence(text).strip()
    if not body or body[0] not in "[{":
        return None
    try:
        data = json.loads(body)
    except json.JSONDecodeError:
        return None
    if isinstance(data, dict):
        data = data.get("stages", data.get("remaining_stages"))
    if not isinstance(data, list):
        return None
    drafts = []
    for item in data:
        if not isinstance(item, dict) or not str(item.get("objective", "")).strip():
            raise PlanParseError("every JSON stage needs an 'objective' and a 'success_criteria' list")
        crit = item.get("success_criteria") or item.get("criteria") or []
        crit = [crit] if isinstance(crit, str) else crit
        drafts.append(_Draft(str(item["objective"]), [str(c) for c in crit], _json_iterations(item)))
    return drafts


def _stage_header(line: str, keyword_mode: bool) -> tuple[str] | None:
    if keyword_mode:
        m = _STAGE_HDR.match(line)
        return (m.group(2),) if m else None
    if line[:1].isspace():
        return None
    m = _NUM_HDR.match(_clean(line) if line.lstrip().startswith(("#", "*")) else line)
    return (m.group(2),) if m else None


def _add_line(draft: _Draft, raw: str) -> None:
    m = _MAXIT.search(raw)
    if m and len(_clean(raw)) < 40:
        draft.max_iterations = int(m.group(1))
        return
    label = _LABEL.match(raw)
    if label:
        kind, rest = label.group(1).lower(), label.group(2).strip()
        if kind == "objective" and rest:
            draft.objective = (draft.objective + " " + rest).strip()
        elif rest:
            draft.criteria.extend(c.strip() for c in rest.split(";") if c.strip())
        return
    b = _BULLET.match(raw)
    # Keep backticks: they mark paths/identifiers the criteria checker looks up.
    item = (b.group(1) if b else raw).strip().strip("*_").strip()
    if not item:
        return
    if b or draft.objective:
        draft.criteria.append(item)
    else:
        draft.objective = item


def _stages_from_text(text: str) -> list[_Draft]:
    lines = [ln.rstrip() for ln in _strip_fence(text).splitlines()]
    keyword_mode = any(_STAGE_HDR.match(ln) for ln in lines)
    drafts: list[_Draft] = []
    for raw in lines:
        if not _clean(raw):
            continue
        hdr = _stage_header(raw, keyword_mode)
        if hdr is not None:
            head = _clean(hdr[0])
            mi = _MAXIT_INLINE.search(head)
            head = _clean(_MAXIT_INLINE.sub("", head))
            drafts.append(_Draft(head, [], int(mi.group(1)) if mi else None))
        elif drafts:
            _add_line(drafts[-1], raw)
    return drafts


def split_compound(objective: str, criteria: list[str]) -> list[tuple[str, list[str]]]:
    """Split ``"do A; then B"`` into one (objective, criteria) pair per step.

    Criteria go to the part whose words they share most (ties: earliest part);
    a part left without criteria gets one naming its own objective, so every
    stage stays checkable.
    """
    parts = [p.strip(" .,") for p in _COMPOUND.split(objective) if len(p.strip(" .,").split()) >= 2]
    if len(parts) < 2:
        return [(objective, criteria)]
    words = [set(_WORD.findall(p.lower())) for p in parts]
    assigned: list[list[str]] = [[] for _ in parts]
    for crit in criteria:
        cw = set(_WORD.findall(crit.lower()))
        best = max(range(len(parts)), key=lambda i: (len(cw & words[i]), -i))
        assigned[best].append(crit)
    return [
        (p, assigned[i] or [f"The map shows, at level 2 or more, the code needed to: {p}"])
        for i, p in enumerate(parts)
    ]


def parse_stage_list(text: str, config: PlanningConfig) -> tuple[list[Stage], int]:
    """Parse stages (text or JSON) into validated :class:`Stage` s; returns (stages, split count)."""
    drafts = _stages_from_json(text or "")
    if drafts is None:
        drafts = _stages_from_text(text or "")
    if not drafts:
        raise PlanParseError("no stages found; write 'STAGE 1: <objective>' followed by '- <criterion>' lines")
    stages: list[Stage] = []
    splits = 0
    for n, d in enumerate(drafts, 1):
        if not d.objective.strip():
            raise PlanParseError(f"stage {n} has no objective; write 'STAGE {n}: <objective>'")
        if not d.criteria:
            raise PlanParseError(
                f"stage {n} ('{d.objective[:60]}') has no success criteria; list them as '- <criterion>' lines"
            )
        parts = split_compound(d.objective, d.criteria)
        splits += len(parts) - 1
        iters = min(d.max_iterations or config.default_stage_iterations, config.max_stage_iterations)
        for objective, crit in parts:
            stages.append(
                Stage(
                    objective=objective[:2000],
                    success_criteria=[c[:2000] for c in crit[: config.max_criteria_per_stage]],
                    max_iterations=max(1, iters),
                )
            )
    return stages, splits


def parse_stage_plan(text: str, config: PlanningConfig) -> StagePlan:
    """Parse a full plan, enforcing the 1..``max_stages`` hard cap (cut stages are counted)."""
    stages, splits = parse_stage_list(text, config)
    kept = stages[: config.max_stages]
    return StagePlan(stages=kept, dropped_stages=len(stages) - len(kept), split_stages=splits)


# --------------------------------------------------------------------------- criteria / reflection

_VERDICT = (r"(NOT\s+MET|UNMET|PARTIALLY\s+MET|UNCHECKED|NOT\s+CHECKED|CANNOT\s+CHECK|UNVERIFIED|UNKNOWN|MET|YES|NO"
            r"|TRUE|FALSE|PASS|FAIL(?:ED)?)")
_CRIT_LINE = re.compile(
    r"^\s*[-*#\s]*(?:C|criterion\s*)?(\d+)\s*[:.)\-—]\s*\**\s*" + _VERDICT + r"\b\**\s*[:|\-—,.]*\s*(.*)$", re.I
)
_POSITIVE = {"MET", "YES", "TRUE", "PASS"}
#: a checker that could not check says so: the verdict is "unchecked", never met nor failed
_UNCHECKED = {"UNCHECKED", "NOT CHECKED", "CANNOT CHECK", "UNVERIFIED", "UNKNOWN"}


def parse_criteria_check(text: str, criteria: list[str], stage_index: int) -> CriteriaCheck:
    """One ``C<n>: MET|NOT MET|UNCHECKED | evidence`` line per criterion (numbered from 1).

    The model's words go to the verdict's ``note``: they are its claim, not something found; a
    criterion about the map is checked against the map afterwards (:mod:`navcore.navigator.map_criteria`).
    """
    found: dict[int, CriterionStatus] = {}
    for line in (text or "").splitlines():
        m = _CRIT_LINE.match(line)
        if not m:
            continue
        n = int(m.group(1))
        if 1 <= n <= len(criteria) and n not in found:
            verdict = re.sub(r"\s+", " ", m.group(2).upper())
            status = "met" if verdict in _POSITIVE else "unchecked" if verdict in _UNCHECKED else "not_met"
            found[n] = CriterionStatus(criterion=criteria[n - 1][:2000], status=status, note=m.group(3).strip()[:2000])
    missing = [f"C{n}" for n in range(1, len(criteria) + 1) if n not in found]
    if missing:
        raise PlanParseError(
            f"no verdict for {', '.join(missing)}; answer one line per criterion as 'C<n>: MET | evidence'"
            " or 'C<n>: NOT MET | what is missing' or 'C<n>: UNCHECKED | why it cannot be checked'"
        )
    return CriteriaCheck(stage_index=stage_index, results=[found[n] for n in sorted(found)])


def parse_reflection(text: str, config: PlanningConfig) -> Reflection:
    """``KEEP`` (+ reasoning), or ``REWRITE`` (+ reasoning) followed by the new remaining stages."""
    lines = _meaningful_lines(text or "")
    if not lines:
        raise PlanParseError("the reflection was empty; answer 'KEEP' or 'REWRITE' followed by stages")
    first = re.sub(r"^(decision|action)\s*:\s*", "", _clean(lines[0]), flags=re.I)
    m = re.match(r"^(KEEP|REWRITE)\b\s*[:.\-—]?\s*(.*)$", first, re.I)
    if not m:
        raise PlanParseError("the reflection must start with 'KEEP' or 'REWRITE'")
    action = m.group(1).lower()
    rest_lines = lines[1:]
    if action == "keep":
        return Reflection(action="keep", reasoning="\n".join([m.group(2), *rest_lines]).strip()[:8000])
    body = "\n".join(rest_lines)
    if re.search(r"\bno (?:more|further|remaining) stages\b", body, re.I) and not _STAGE_HDR.search(body):
        return Reflection(action="rewrite", reasoning=(m.group(2) + "\n" + body).strip()[:8000])
    stages, _ = parse_stage_list(body, config)
    first_stage = next((i for i, ln in enumerate(rest_lines) if _STAGE_HDR.match(ln)), 0)
    reasoning = "\n".join([m.group(2), *rest_lines[:first_stage]]).strip()
    return Reflection(action="rewrite", reasoning=reasoning[:8000], remaining_stages=stages)
