"""The offline model's research behaviour: plan, execute, refine and an extractive, cited answer.

Deterministic, no network, no key — the embedded default runs the whole
research workflow with it:

* **plan** — from the question's terms and the map: the repository's symbols
  in the files the ranking and a per-term search point at are scored by how
  many (and how rare) question terms their names carry and how many distinct
  terms their file covers; each of the best few becomes a step "read
  ``path::Name`` and the code that uses it", plus one step searching for the
  question's terms. A re-plan covers only the terms the refinery found missing.
* **execute** — :mod:`.research_exec` (code tools through the workflow, then
  ``finish_step`` with findings quoting the lines the tools returned);
* **refine** — FINISH when the findings cover most of the question's terms
  (or the rounds are spent), else CONTINUE with the uncovered terms;
* **synthesize** — an extractive answer: where the answer lives, then the
  best findings with their citations and the key line of each.
"""

from __future__ import annotations

import json
import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from durable_navigator.activities.models.offline.research_exec import (
    OfflineExecutorConfig,
    is_doc,
    is_noise,
    line_score,
    next_calls,
    parse_transcript,
    step_findings,
)
from durable_navigator.activities.models.offline.terms import goal_terms, split_identifier
from durable_navigator.navcore.run.findings import Finding
from durable_navigator.navcore.model.model import (
    ModelResponse,
    ResearchExecuteTask,
    ResearchPlanTask,
    ResearchRefineTask,
    ResearchSynthesizeTask,
    ToolCallOut,
)
from durable_navigator.navcore.research.prompts import FINISH_STEP_FUNCTION
from durable_navigator.navtypes.flightplan import FlightPlan

__all__ = ["OfflineResearchConfig", "OfflineResearcher"]

#: words of a question that say nothing about where the answer is
_GENERIC = frozenset("code repository project work works happen happens handled handle handles really".split())
#: symbol kinds a step is built around (fields and constants are read as part of their owner)
_STEP_KINDS = frozenset({"class", "function", "method", "interface", "type", "struct", "trait", "module"})


class OfflineResearchConfig(BaseModel):
    """Knobs of the offline research behaviour (named, not inline)."""

    model_config = ConfigDict(frozen=True)

    #: ranked files whose symbols are candidates, and search hits per question term added to them
    ranked_files: int = Field(60, ge=1)
    hits_per_term: int = Field(8, ge=0)
    #: "read X and its uses" steps per plan (one search step follows)
    symbol_steps: int = Field(2, ge=0)
    #: weight of the file's distinct-term coverage in its score
    coverage_weight: float = Field(1.0, ge=0)
    #: weight of a symbol's size (log of its lines, 1.0 at 100 lines) in its score
    size_weight: float = Field(0.5, ge=0)
    #: FINISH when this share of the question's terms occurs in the findings
    finish_coverage: float = Field(0.75, gt=0, le=1)
    #: findings the answer lists
    answer_findings: int = Field(8, ge=1)
    executor: OfflineExecutorConfig = OfflineExecutorConfig()


def _terms(text: str) -> list[str]:
    return [t for t in goal_terms(text) if t not in _GENERIC]


class OfflineResearcher:
    """Answers the four research task kinds deterministically."""

    def __init__(self, config: OfflineResearchConfig | None = None) -> None:
        self.config = config or OfflineResearchConfig()

    def answer(self, task: Any, engine: Any) -> ModelResponse:
        """The response to a research task (``engine``: the repository's opened repo map)."""
        if isinstance(task, ResearchExecuteTask):
            return self._execute(task, engine)
        if isinstance(task, ResearchPlanTask):
            return ModelResponse(text=self._plan(task, engine), calls=1)
        if isinstance(task, ResearchRefineTask):
            return ModelResponse(text=self._refine(task, engine), calls=1)
        assert isinstance(task, ResearchSynthesizeTask)
        return ModelResponse(text=self._synthesize(task), calls=1)

    # -- plan ----------------------------------------------------------------

    def _plan(self, task: ResearchPlanTask, engine: Any) -> str:
        terms = _terms(task.missing) if task.missing else _terms(task.goal)
        terms = terms or _terms(task.goal)
        done = " ".join(task.done_steps)
        steps: list[str] = []
        for sym in self._candidates(engine, task.goal, terms):
            if len(steps) >= self.config.symbol_steps:
                break
            if sym.id not in done:
                steps.append(f"Read `{sym.id}` and the code that uses it")
        steps.append(f"Search the code for: {' '.join(terms[:8])}")
        return json.dumps(steps[: task.max_steps])

    def _candidates(self, engine: Any, question: str, terms: list[str]) -> list[Any]:
        """One symbol per file, best files first.

        A term's weight is the square root of its inverse document frequency over the repository's
        files (a word every file mentions, like the project's own name, says little; a rare one
        says more, but covering two terms beats one rare term); a file scores the number and the
        weights of the distinct terms its symbol names and path carry; its symbol is the one whose
        name carries
        the most weight, larger bodies and classes first (the mechanism rather than a helper).
        """
        if engine is None or not terms:
            return []
        cfg = self.config
        files = [r.path for r in engine.rank(FlightPlan(goal=question[:8000]))[: cfg.ranked_files]]
        total = max(len(engine.files), 1)
        idf: dict[str, float] = {}
        for term in dict.fromkeys(terms):
            # search answers with definitions (several per file) and module code: the files
            # among its hits, best first, are the term's documents. Keyword mode: this counts the
            # files that hold the word (its idf); the hybrid search would add files that do not
            hits = list(dict.fromkeys(h.path for h in engine.search(term, limit=total, mode="keyword")))
            # damped: a rare word (often the question's verb) must not outweigh two common nouns
            idf[term] = math.sqrt(math.log(1.0 + total / max(len(hits), 1)))
            files += hits[: cfg.hits_per_term]
        files = [p for p in dict.fromkeys(files) if not is_noise(p, question)]
        best: list[tuple[float, str, Any]] = []
        for path in files:
            try:
                found = [s for s in engine.symbols(path) if s.kind in _STEP_KINDS]
            except Exception:  # noqa: BLE001 - an unindexed or vanished file has no symbols to offer
                continue
            named = [(s, set(split_identifier(s.name)) & idf.keys()) for s in found]
            covered = set(split_identifier(path)) & idf.keys()
            for _, parts in named:
                covered |= parts
            scored = [(sum(idf[t] for t in parts) + self._shape(s), -s.start_line, s) for s, parts in named if parts]
            if not scored:
                continue
            scored.sort(key=lambda t: (-t[0], -t[1]))
            cover = cfg.coverage_weight * (len(covered) + sum(idf[t] for t in covered))
            # a file's first symbol competes with other files' first ones, its second with their seconds
            best += [(rank, -round(cover + sym_score, 9), path, sym) for rank, (sym_score, _, sym) in enumerate(scored)]
        best.sort(key=lambda t: t[:3])
        return [s for *_, s in best]

    def _shape(self, symbol: Any) -> float:
        """Bonus for a class and for a larger body (log of its lines, ``size_weight`` at 100 lines)."""
        lines = max(symbol.end_line - symbol.start_line, 0)
        return (0.25 if symbol.kind == "class" else 0.0) + self.config.size_weight * math.log1p(lines) / math.log(100)

    # -- execute -------------------------------------------------------------

    def _execute(self, task: ResearchExecuteTask, engine: Any) -> ModelResponse:
        cfg = self.config.executor
        ev = parse_transcript(task, engine)
        calls = [] if task.turn >= task.max_turns else next_calls(task, ev, engine, cfg)
        if calls:
            what = "; ".join(f"{c.name} {json.dumps(c.args, sort_keys=True)}" for c in calls)
            return ModelResponse(text=f"look up: {what}"[:2000], tool_calls=calls, calls=1)
        findings = step_findings(task, ev, cfg)
        summary = (f"{len(findings)} findings from {len(ev.reads)} reads" if findings
                   else "the tools returned nothing this step can cite")
        return ModelResponse(text=summary, calls=1, tool_calls=[
            ToolCallOut(name=FINISH_STEP_FUNCTION, args={"summary": summary, "findings": findings})])

    # -- refine --------------------------------------------------------------

    def _refine(self, task: ResearchRefineTask, engine: Any = None) -> str:
        terms = _terms(task.goal)
        words: set[str] = set()
        for line in task.findings:
            for w in line.replace("`", " ").split():
                words.add(w.lower().strip(".,:;()[]"))
                words.update(split_identifier(w))
        covered = [t for t in terms if t in words]
        missing = [t for t in terms if t not in words]
        # a term the repository never mentions cannot be found by another round
        findable = [t for t in missing if engine is None or engine.search(t, limit=1, mode="keyword")]
        share = len(covered) / len(terms) if terms else 1.0
        last = task.index + 1 >= task.max_rounds
        # another round only helps if it would read something new: a symbol carrying a missing term
        # that no step has read, or a search for just the missing terms not made yet
        done = " ".join(task.steps)
        unread = [s for s in self._candidates(engine, task.goal, findable) if s.id not in done][:1] if findable else []
        searched = f"Search the code for: {' '.join(findable[:8])}" in done
        if share >= self.config.finish_coverage or last or not findable or (not unread and searched):
            why = f"the findings cover {len(covered)} of {len(terms)} question terms"
            if missing and not findable:
                why += f"; the repository never mentions {', '.join(missing[:6])}"
            elif last and share < self.config.finish_coverage:
                why = "the rounds are spent; " + why
            elif findable and not unread and searched:
                why += f"; nothing unread carries {', '.join(findable[:6])}"
            return f"DECISION: FINISH\nREASON: {why}\n"
        missing = findable
        return (f"DECISION: CONTINUE\nMISSING: code about {', '.join(missing[:6])}\n"
                f"REASON: the findings cover {len(covered)} of {len(terms)} question terms\n")

    # -- synthesize ------------------------------------------------------------

    def _synthesize(self, task: ResearchSynthesizeTask) -> str:
        weights = {t: 1.0 for t in _terms(task.goal)}
        def rank(ix: tuple[int, Finding]) -> tuple[bool, bool, int, int]:
            # the plan's steps come best-first and each step's findings too: keep that order,
            # code before prose, noise (tests, docs) last
            i, f = ix
            path = f.citations[0].path if f.citations else ""
            return (not f.citations or is_noise(path, task.goal), is_doc(path), f.step, i)

        ranked = sorted(enumerate(task.all_findings), key=rank)
        chosen = [f for _, f in ranked[: self.config.answer_findings] if f.citations]
        if not chosen:
            return ("The research found no code it could cite for this question; try a more specific question "
                    "or a larger budget.")
        files = list(dict.fromkeys(c.path for f in chosen for c in f.citations))
        lead = f"The code that answers this is in {', '.join(f'`{p}`' for p in files[:4])}"
        lead += f" (and {len(files) - 4} more files)" if len(files) > 4 else ""
        lines = [lead + ":", ""]
        for f in chosen:
            lines.append(f"- {f.claim} ({', '.join(c.label() for c in f.citations)})" + _key_line(f, weights))
        if task.early:
            lines += ["", f"The research ended early ({task.early}); this answer covers what was found until then."]
        lines += ["", "This answer is extractive (the offline model): each point quotes or names the cited code."]
        return "\n".join(lines)


def _key_line(finding: Finding, weights: dict[str, float]) -> str:
    """The finding's most relevant quoted line, inline."""
    rows = [r.split(": ", 1)[-1].strip() for r in finding.quote.splitlines() if r.strip()]
    if not rows or " uses `" in finding.claim:  # a call site's claim already quotes its line
        return ""
    best = max(rows, key=lambda r: (line_score(r, weights), -rows.index(r)))
    return f" — `{best[:140].replace('`', chr(39))}`" if best else ""
