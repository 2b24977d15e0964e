"""The offline model's investigation answers: plan maker, reviewer, confirmation, criteria checker, reflector,
stage compression.

Deterministic and lexical: a plan of one stage per clause of the goal (or
"locate" then "explain" for a one-clause goal), criteria naming the goal's
terms; a criterion is met only when one cited finding mentions *every* content
term of it (whole words or identifier parts of its claim, quoted code or cited
paths — never a substring, never half of them), with that finding's citations as
the evidence and each term's location in the note; a criterion asking for
citations that no finding covers is not met (the note says which terms were
never found); any other criterion is unchecked — word overlap cannot show it.
The reflector drops a remaining stage only when the findings cover each of its
criteria; a stage's record is its size, the worker's answer and its
first findings with their citations. It reads the typed task, never the
prompt, and answers the same JSON an LLM is asked for (parsed by the same code).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from durable_navigator.activities.models.offline.terms import goal_terms, split_identifier
from durable_navigator.navcore.run.findings import Finding
from durable_navigator.navcore.planning.investigation_plan import PlannedStage
from durable_navigator.navcore.model.model import InvestigateTask

__all__ = ["OfflineInvestigatorConfig", "investigate_answer", "finding_matches", "finding_terms"]

_CLAUSE = re.compile(r"[;?\n]|\.\s|\bthen\b")
#: words of the criteria templates themselves: never evidence of anything
_TEMPLATE = frozenset({"code", "cited", "cite", "callers", "caller", "entry", "points", "implemented", "implementing",
                       "implements", "behaviour", "behavior", "explained", "lines", "asked", "about", "found", "show",
                       "shows", "works", "function", "functions", "method", "methods", "class", "module", "file",
                       "files"})
#: what a citation claim says: a criterion met exactly by cited findings ("… is cited", "cited lines show …")
_CITATION_CLAIM = re.compile(r"\b(?:cited|cites?|citations?|quoted)\b", re.I)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


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


def _norm(word: str) -> str:
    """A word without its plural ``s`` (``values`` ~ ``value``): the only folding; no stemming."""
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def _vocabulary(text: str) -> set[str]:
    """The words of ``text`` as code reads them: whole identifiers and their parts, lower-case, folded."""
    out: set[str] = set()
    for word in _WORD.findall(text):
        out.add(_norm(word.lower().strip("_")))
        out.update(_norm(part) for part in split_identifier(word))
    return out


def finding_terms(finding: Finding, terms: list[str]) -> list[str]:
    """The ``terms`` the finding mentions — as whole words or identifier parts of its claim, its quoted
    code or its cited paths, never as a substring of another word."""
    vocab = _vocabulary(" ".join([finding.claim, finding.quote, *(c.path for c in finding.citations)]))
    return [t for t in terms if _norm(t) in vocab]


def finding_matches(finding: Finding, terms: list[str]) -> int:
    """How many of ``terms`` the finding mentions (see :func:`finding_terms`)."""
    return len(finding_terms(finding, terms))


def _plan(task: InvestigateTask, cfg: OfflineInvestigatorConfig) -> dict:
    clauses = [c.strip(" ,.") for c in _CLAUSE.split(task.goal) if _terms(c)]
    if len(clauses) <= 1:
        terms = _terms(task.goal)[: cfg.criterion_terms] or ["goal"]
        what = " ".join(terms)
        stages = [
            {"title": f"locate {what}", "task": f"Find where {what} is implemented in the repository: {task.goal}",
             "criteria": [f"the code implementing {t} is cited" for t in terms[:2]]},
            {"title": f"explain {what}", "task": f"Explain how it works, with cited lines: {task.goal}",
             "criteria": [f"cited lines show how {what} works"]},
        ]
    else:
        stages = []
        for clause in clauses[: task.max_stages]:
            terms = _terms(clause)[: cfg.criterion_terms]
            stages.append({"title": " ".join(terms), "task": clause,
                           "criteria": [f"the code about {' '.join(terms)} is cited"]})
    return {"stages": stages[: task.max_stages]}


def _covers(finding: Finding, terms: list[str]) -> bool:
    """A cited finding covers a criterion when it mentions every one of its terms (a part is no evidence)."""
    return bool(terms) and bool(finding.citations) and finding_matches(finding, terms) == len(terms)


def _unmet(stage: PlannedStage, findings: list[Finding]) -> list[str]:
    return [c for c in stage.criteria if not any(_covers(f, _terms(c)) for f in findings)]


def _where(term: str, findings: list[Finding]) -> str:
    """``term (path:1-9)`` for the first cited finding mentioning it, else ``term (nowhere)``."""
    hit = next((f for f in findings if f.citations and finding_terms(f, [term])), None)
    return f"{term} ({hit.citations[0].label()})" if hit is not None else f"{term} (nowhere)"


def _verdict(criterion: str, findings: list[Finding], cfg: OfflineInvestigatorConfig) -> dict:
    """One criterion's verdict: met only when one cited finding mentions all its terms; not met when it
    asks for citations and none does; unchecked when it asks for what words in findings cannot show."""
    terms = _terms(criterion)
    covering = [f for f in findings if _covers(f, terms)]
    found = [_where(t, findings) for t in terms]
    if covering:
        evidence = list(dict.fromkeys(c.label() for f in covering for c in f.citations))[: cfg.evidence_per_criterion]
        return {"criterion": criterion, "status": "met", "evidence": evidence,
                "note": f"one cited finding mentions every term: {', '.join(found)}"}
    partial = [w for w in found if not w.endswith("(nowhere)")]
    missing = [t for t, w in zip(terms, found) if w.endswith("(nowhere)")] or terms
    if terms and _CITATION_CLAIM.search(criterion):
        return {"criterion": criterion, "status": "not_met", "evidence": [],
                "note": f"no cited finding mentions all of {', '.join(terms)}; never found: {', '.join(missing)}"
                        + (f"; found apart: {', '.join(partial)}" if partial else "")}
    return {"criterion": criterion, "status": "unchecked", "evidence": [],
            "note": "the offline checker reads only whether cited findings mention a criterion's terms; it cannot "
                    "check this one" + (f" (found: {', '.join(partial)})" if partial else "")}


def _criteria(task: InvestigateTask, cfg: OfflineInvestigatorConfig) -> dict:
    return {"criteria": [_verdict(c, task.all_findings, cfg) for c in (task.stage.criteria if task.stage else [])]}


def _reflect(task: InvestigateTask) -> dict:
    # dropping work needs more than meeting a criterion: every term of every criterion in one finding
    drop = [i for i, s in enumerate(task.stages)
            if i > task.stage_index and task.all_findings and not _unmet(s, task.all_findings)]
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
