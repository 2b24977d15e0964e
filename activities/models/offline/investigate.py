"""The offline model's investigation answers: plan maker, reviewer, confirmation, criteria checker, reflector,
stage compression.

Deterministic and lexical: a plan of one stage per clause of the goal (or
"locate" then "explain" for a one-clause goal), criteria naming the goal's
terms; a criterion is met when a finding of the stage mentions one of its
content terms (claim, quote or cited path), with that finding's citations as
the evidence (at least half of its terms in one finding); the reflector drops
a remaining stage only when a finding of the finished stage mentions every term
of each of its criteria; a stage's record is its size, the worker's answer and its
first findings with their citations. It reads the typed task, never the
prompt, and answers the same JSON an LLM is asked for (parsed by the same code).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from durable_navigator.activities.models.offline.terms import goal_terms
from durable_navigator.navcore.findings import Finding
from durable_navigator.navcore.investigation_types import PlannedStage
from durable_navigator.navcore.model import InvestigateTask

__all__ = ["OfflineInvestigatorConfig", "investigate_answer", "finding_matches"]

_CLAUSE = re.compile(r"[;?\n]|\.\s|\bthen\b")
#: words of the criteria templates themselves: never evidence of anything
_TEMPLATE = frozenset({"code", "cited", "cite", "callers", "caller", "entry", "points", "implemented", "implementing",
                       "implements", "behaviour", "behavior", "explained", "lines", "asked", "about", "found"})


@dataclass(frozen=True)
class OfflineInvestigatorConfig:
    """Named knobs of the offline investigator."""

    #: goal terms a criterion names
    criterion_terms: int = 3
    #: citations kept as one criterion's evidence
    evidence_per_criterion: int = 3
    #: findings quoted (claim + citations) in a stage's compressed record
    record_findings: int = 3


def _terms(text: str) -> list[str]:
    return [t for t in goal_terms(text) if t not in _TEMPLATE]


def finding_matches(finding: Finding, terms: list[str]) -> int:
    """How many of ``terms`` the finding mentions (claim, quote, cited paths)."""
    hay = " ".join([finding.claim, finding.quote, *(c.path for c in finding.citations)]).lower()
    return sum(1 for t in terms if t in hay)


def _plan(task: InvestigateTask, cfg: OfflineInvestigatorConfig) -> dict:
    clauses = [c.strip(" ,.") for c in _CLAUSE.split(task.goal) if _terms(c)]
    if len(clauses) <= 1:
        terms = _terms(task.goal)[: cfg.criterion_terms] or ["goal"]
        what = " ".join(terms)
        stages = [
            {"title": f"locate {what}", "task": f"Find where {what} is implemented in the repository: {task.goal}",
             "criteria": [f"the code implementing {t} is cited" for t in terms[:2]]},
            {"title": f"explain {what}", "task": f"Explain how it works, with cited lines: {task.goal}",
             "criteria": [f"the behaviour asked about ({what}) is explained with cited lines"]},
        ]
    else:
        stages = []
        for clause in clauses[: task.max_stages]:
            terms = _terms(clause)[: cfg.criterion_terms]
            stages.append({"title": " ".join(terms), "task": clause,
                           "criteria": [f"the code about {' '.join(terms)} is cited"]})
    return {"stages": stages[: task.max_stages]}


def _covers(finding: Finding, terms: list[str], strict: bool = False) -> bool:
    """A finding covers a criterion when it mentions at least half its terms (``strict``: all of them)."""
    hits = finding_matches(finding, terms)
    return bool(terms) and (hits == len(terms) if strict else 2 * hits >= len(terms))


def _unmet(stage: PlannedStage, findings: list[Finding], strict: bool = False) -> list[str]:
    return [c for c in stage.criteria if not any(_covers(f, _terms(c), strict) for f in findings)]


def _criteria(task: InvestigateTask, cfg: OfflineInvestigatorConfig) -> dict:
    out = []
    for criterion in task.stage.criteria if task.stage else []:
        terms = _terms(criterion)
        ranked = sorted(((finding_matches(f, terms), i) for i, f in enumerate(task.all_findings)), key=lambda p: (-p[0], p[1]))
        evidence: list[str] = []
        for score, i in ranked:
            if not _covers(task.all_findings[i], terms):
                break
            evidence += [c.label() for c in task.all_findings[i].citations if c.label() not in evidence]
        evidence = evidence[: cfg.evidence_per_criterion]
        out.append({"criterion": criterion, "met": bool(evidence), "evidence": evidence,
                    "note": f"findings mention {', '.join(terms)}" if evidence else f"no finding mentions {', '.join(terms)}"})
    return {"criteria": out}


def _reflect(task: InvestigateTask) -> dict:
    # dropping work needs more than meeting a criterion: every term of every criterion in one finding
    drop = [i for i, s in enumerate(task.stages)
            if i > task.stage_index and task.all_findings and not _unmet(s, task.all_findings, strict=True)]
    reason = (f"the findings of stage {task.stage_index} already meet every criterion of stage(s) "
              f"{', '.join(map(str, drop))}" if drop else "the remaining stages still have unmet criteria: keep them")
    return {"drop": drop, "change": [], "add": [], "reason": reason}


def _compress(task: InvestigateTask, cfg: OfflineInvestigatorConfig) -> dict:
    """The stage's record: its size, the worker's answer, then its first findings with their citations."""
    title = task.stage.title if task.stage else f"stage {task.stage_index}"
    head = (f"[{task.stage_index}] {title}: {len(task.all_findings)} findings in {task.loop} loop(s); "
            f"{task.summary or 'no answer'}")
    facts = [f"- {f.claim} ({', '.join(c.label() for c in f.citations) or 'uncited'})"
             for f in task.all_findings[: cfg.record_findings]]
    return {"record": "\n".join([head, *facts])}


def investigate_answer(task: InvestigateTask, cfg: OfflineInvestigatorConfig | None = None) -> str:
    """The JSON answer of an investigation task."""
    cfg = cfg or OfflineInvestigatorConfig()
    kind = task.kind
    if kind == "investigate.plan":
        return json.dumps(_plan(task, cfg))
    if kind == "investigate.review" and task.subject == "plan":
        vague = [s.title for s in task.stages if not any(_terms(c) for c in s.criteria)]
        critique = (f"criteria of {', '.join(vague)} name nothing checkable" if vague
                    else f"{len(task.stages)} stages, each with criteria naming code to cite: no change needed")
        return json.dumps({"critique": critique})
    if kind == "investigate.review":
        unmet = _unmet(task.stage, task.all_findings) if task.stage else []
        critique = ("no cited finding yet for: " + "; ".join(unmet)) if unmet else (
            f"{len(task.all_findings)} cited findings cover every criterion")
        return json.dumps({"critique": critique})
    if kind == "investigate.confirm":
        if task.subject == "plan":
            ok = "no change needed" in task.critique
            return json.dumps({"exit": ok, "reason": "the reviewer found nothing to change" if ok else task.critique})
        done = not task.critique.startswith("no cited finding") or task.loop + 1 >= task.max_loops
        return json.dumps({"exit": done, "reason": "criteria covered or the loop cap reached" if done
                           else "another loop on the uncovered criteria"})
    if kind == "investigate.compress":
        return json.dumps(_compress(task, cfg))
    if kind == "investigate.criteria":
        return json.dumps(_criteria(task, cfg))
    return json.dumps(_reflect(task))
