"""The investigation's side effects: ``investigate.check_evidence`` and ``investigate.write_report``.

* ``check_evidence`` — every citation a criteria checker gave as evidence is
  checked against the repository (paths confined to the root, lines that
  exist; a range past a file's end is clamped): a criterion stays met only
  with at least one citation that exists.
* ``write_report`` — ``report.md`` (per-stage findings read from the artifact
  store, criteria with evidence, open questions, cost per stage) and
  ``report.json``, written atomically under ``<out>/<workflow id>/``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from temporalio import activity

from durable_navigator.activities.artifacts import ArtifactStore, atomic_write_bytes
from durable_navigator.activities.models.offline.terms import goal_terms
from durable_navigator.activities.navigator import to_application_error
from durable_navigator.activities.requests import EngineSource
from durable_navigator.activities.research import LineCounter, heartbeat_while_running
from durable_navigator.activities.research_calls import load_findings
from durable_navigator.navcore.run.citations import check_citation, parse_citations
from durable_navigator.navcore.run.findings import Finding
from durable_navigator.navcore.investigation.investigation import (
    CriterionStatus,
    EvidenceInput,
    EvidenceOutput,
    InvestigationState,
    ScoreInput,
    ScoreOutput,
    WriteReportInput,
    WriteReportOutput,
)
from durable_navigator.navcore.investigation.report import report_dict, report_markdown
from durable_navigator.navtypes.errors import NavigatorError

__all__ = ["InvestigationActivities", "checked_criterion"]

MEDIA_MARKDOWN = "text/markdown; charset=utf-8"
MEDIA_JSON = "application/json"


def checked_criterion(status: CriterionStatus, count: Callable[[str], int | None]) -> tuple[CriterionStatus, int]:
    """The criterion with only existing evidence kept (and how many citations were checked)."""
    kept: list[str] = []
    dropped: list[str] = []
    checked = 0
    for raw in status.evidence:
        cites = parse_citations(raw)
        if not cites:
            dropped.append(f"{raw[:120]}: not a path:start-end citation")
            continue
        for cite in cites:
            checked += 1
            verdict = check_citation(cite, count(cite.path))
            if verdict.written is None:
                dropped.append(f"{cite.label()}: {verdict.reason}")
            elif verdict.written.label() not in kept:
                kept.append(verdict.written.label())
    note = status.note
    if status.met and not kept:
        note = (note + "; " if note else "") + "claimed met without evidence that exists: not met"
    verdict = "not_met" if status.met and not kept else status.status
    return status.model_copy(update={"evidence": kept, "dropped": dropped, "status": verdict,
                                     "note": note[:1000]}), checked


class InvestigationActivities:
    """``investigate.check_evidence`` and ``investigate.write_report`` (one instance per worker)."""

    def __init__(self, store: ArtifactStore, engines: EngineSource, *, write_files: bool = True,
                 host_queue: Callable[[], str] = lambda: "", heartbeat_every_s: float = 5.0) -> None:
        """``write_files``: write report.md / report.json here (see ``NavigatorActivities``); ``host_queue()``:
        the queue only this host polls, named in evidence checks (its index is warm: affinity)."""
        self.store = store
        self.write_files = write_files
        self.engines = engines
        self._host_queue = host_queue
        self.heartbeat_every_s = heartbeat_every_s

    def all(self) -> list[Callable[..., Any]]:
        """The activities of this instance, for worker registration."""
        return [self.check_evidence, self.write_report, self.score_branches]

    async def _counter(self, repo_root: str) -> LineCounter:
        engine = await self.engines(repo_root)
        return LineCounter(Path(engine.root))

    @activity.defn(name="investigate.check_evidence")
    async def check_evidence(self, inp: EvidenceInput) -> EvidenceOutput:
        """Keep only evidence that exists in the repository; a criterion without any is not met.

        Heartbeats while it runs: on a host whose index is cold, opening the engine indexes the repository.
        """
        beat = asyncio.create_task(heartbeat_while_running(self.heartbeat_every_s))
        try:
            count = await self._counter(inp.repo_root)
            out: list[CriterionStatus] = []
            checked = dropped = 0
            for status in inp.criteria:
                fixed, n = await asyncio.to_thread(checked_criterion, status, count)
                out.append(fixed)
                checked += n
                dropped += len(fixed.dropped)
        except NavigatorError as exc:
            raise to_application_error(exc) from exc
        finally:
            beat.cancel()
        return EvidenceOutput(criteria=out, checked=checked, dropped=dropped, host_queue=self._host_queue())

    @activity.defn(name="investigate.score_branches")
    async def score_branches(self, inp: ScoreInput) -> ScoreOutput:
        """Goal identifiers each branch's findings cover (claims, quotes, cited paths)."""
        terms = goal_terms(inp.goal)
        covered: list[int] = []
        tokens: list[int] = []
        for ref in inp.findings:
            text = " ".join(f"{f.claim} {f.quote} {' '.join(c.path for c in f.citations)}"
                            for f in load_findings(self.store, ref).findings).lower()
            covered.append(sum(1 for t in terms if t in text))
        for ref in inp.packs:
            text = self.store.get_bytes(ref).decode("utf-8", "replace").lower() if ref is not None else ""
            covered.append(sum(1 for t in terms if t in text))
            tokens.append(len(text) // 4)
        return ScoreOutput(covered=covered, terms=len(terms), tokens=tokens)

    @activity.defn(name="investigate.write_report")
    async def write_report(self, inp: WriteReportInput) -> WriteReportOutput:
        """Write report.md and report.json (atomically)."""
        try:
            return await asyncio.to_thread(self._write, inp)
        except NavigatorError as exc:
            raise to_application_error(exc) from exc

    def _write(self, inp: WriteReportInput) -> WriteReportOutput:
        state = InvestigationState.model_validate_json(inp.state_json)
        findings: dict[int, list[Finding]] = {
            s.index: load_findings(self.store, s.findings_ref).findings for s in state.stages if s.findings_ref}
        records = {s.index: self.store.get_bytes(s.record_ref).decode("utf-8") for s in state.stages if s.record_ref}
        text = report_markdown(state, inp.workflow_id, findings, inp.completed_normally, records)
        report = report_dict(state, inp.workflow_id, inp.completed_normally)
        report["evidence"] = {"citations": sum(len(c.evidence) for s in state.stages for c in s.criteria_status),
                              "dropped": sum(len(c.dropped) for s in state.stages for c in s.criteria_status)}
        out = Path(inp.out_dir).expanduser().resolve() / inp.workflow_id
        report_text = json.dumps(report, indent=2, sort_keys=True) + "\n"
        ref = self.store.put_bytes(text.encode("utf-8"), MEDIA_MARKDOWN, f"investigation report for {inp.workflow_id}")
        json_ref = self.store.put_bytes(report_text.encode("utf-8"), MEDIA_JSON, f"report for {inp.workflow_id}")
        if self.write_files:
            atomic_write_bytes(out / "report.md", text.encode("utf-8"))
            atomic_write_bytes(out / "report.json", report_text.encode("utf-8"))
        return WriteReportOutput(report_path=str(out / "report.md"), report_json_path=str(out / "report.json"),
                                 report_ref=ref, report_json_ref=json_ref, summary=text[:600])
