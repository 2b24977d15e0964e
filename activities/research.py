"""The research workflow's non-model activities: aggregate findings, write the cited answer.

* ``research.aggregate`` merges a step's findings into the run's findings
  document (both artifacts), checking every citation against the repository
  first: a citation of a file that is not in the repository or of a line past
  its end is dropped (a range running past the end is clamped). The workflow
  keeps only the reference and a few counts.
* ``research.write_answer`` writes ``answer.md`` (the answer, then the
  findings with their quotes) and ``report.json`` into
  ``<out_dir>/<workflow id>/``, atomically, after checking every citation of
  the whole document against the repository: no written citation names a
  line that does not exist. What the check did goes into ``report.json``.

Built once per worker with the artifact store and the engine opener; names are
stable public API.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from temporalio import activity

from durable_navigator.activities.artifacts import ArtifactStore, atomic_write_bytes
from durable_navigator.activities.navigator import to_application_error
from durable_navigator.activities.requests import EngineSource
from durable_navigator.activities.research_calls import finding_line, load_findings
from durable_navigator.navcore.run.citations import Citation, CitationCheck, check_citation, parse_citations, rewrite_citations
from durable_navigator.navcore.run.findings import Finding, FindingsDoc
from durable_navigator.navcore.research.research import (
    AggregateInput,
    AggregateOutput,
    FindingsState,
    WriteAnswerInput,
    WriteAnswerOutput,
)
from durable_navigator.navcore.run.sources import display_root
from durable_navigator.navtypes.errors import NavigatorError, PathEscapeError

__all__ = ["ResearchActivities", "LineCounter", "answer_markdown", "heartbeat_while_running"]

MEDIA_JSON = "application/json"
MEDIA_MARKDOWN = "text/markdown; charset=utf-8"
#: cited files listed in the workflow's findings state (the document has them all)
STATE_FILES = 40
#: lines of the aggregate result (they go into history and the decision log)
LOG_LINES = 12


async def heartbeat_while_running(every_s: float) -> None:
    """Heartbeat every ``every_s`` seconds until cancelled (an activity that may open a cold index)."""
    while True:
        activity.heartbeat()
        await asyncio.sleep(every_s)


class LineCounter:
    """Line counts of repository files, confined to the root (``..``, absolute paths, symlink escapes refused)."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self._cache: dict[str, int | None] = {}

    def __call__(self, path: str) -> int | None:
        """The file's line count, or None when ``path`` is not a readable file inside the repository."""
        if path not in self._cache:
            self._cache[path] = self._count(path)
        return self._cache[path]

    def _count(self, path: str) -> int | None:
        from durable_navigator.repomap.regular import read_regular
        from durable_navigator.repomap.safepath import resolve_inside

        try:
            target = resolve_inside(self.root, path)
        except PathEscapeError:
            return None
        if not target.is_file():
            return None
        try:
            data = read_regular(target)  # is_file() above, but the name may be a FIFO by now
        except OSError:
            return None
        if b"\0" in data[:8192]:
            return None  # binary: no lines to cite
        return data.count(b"\n") + (0 if not data or data.endswith(b"\n") else 1)


def _checked(finding: Finding, count: Callable[[str], int | None]) -> tuple[Finding | None, list[str]]:
    """The finding with its citations checked (None when none survives); why any were dropped."""
    kept: list[Citation] = []
    dropped: list[str] = []
    for cite in finding.citations:
        check = check_citation(cite, count(cite.path))
        if check.written is None:
            dropped.append(f"{cite.label()}: {check.reason}")
        elif check.written not in kept:
            kept.append(check.written)
    if not kept:
        return None, dropped or [f"'{finding.claim[:60]}': no citation"]
    return finding.model_copy(update={"citations": kept}), dropped


def answer_markdown(question: str, repo_root: str, answer: str | None, findings: list[Finding],
                    early: str | None) -> str:
    """``answer.md`` before the citation check: the answer, then every finding with its quote."""
    lines = [f"# {question.strip()}", "", f"Repository: `{display_root(repo_root)}`", ""]
    if early:
        lines += [f"> The research ended early: {early}.", ""]
    lines += ["## Answer", ""]
    if answer and answer.strip():
        lines += [answer.strip(), ""]
    elif findings:
        lines += ["No synthesized answer could be written; the findings below are what the research established.",
                  ""]
    else:
        lines += ["The research found nothing it could cite for this question.", ""]
    if findings:
        lines += ["## Findings", ""]
        for f in findings:
            lines.append(f"- {finding_line(f.claim, [c.label() for c in f.citations])}")
            if f.quote.strip():
                quote = "\n".join(f"      {q}" for q in f.quote.rstrip().splitlines())
                lines += ["", "  ```", quote, "  ```"]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


class ResearchActivities:
    """``research.aggregate`` and ``research.write_answer`` with their dependencies (one per worker)."""

    def __init__(self, store: ArtifactStore, engines: EngineSource, heartbeat_every_s: float = 5.0,
                 *, write_files: bool = True, host_queue: Callable[[], str] = lambda: "") -> None:
        """``write_files``: write answer.md / report.json here (see ``NavigatorActivities``); ``host_queue()``:
        the queue only this host polls, named in every merge of findings (its index is warm: affinity)."""
        self.store = store
        self._host_queue = host_queue
        self.write_files = write_files
        self.engines = engines
        self.heartbeat_every_s = heartbeat_every_s

    def all(self) -> list[Callable[..., Any]]:
        """The activities of this instance, for worker registration."""
        return [self.aggregate, self.write_answer]

    async def _root(self, repo_root: str) -> Path:
        engine = await self.engines(repo_root)
        return Path(engine.root)

    async def _guard(self, work: Any) -> Any:
        beat = asyncio.create_task(heartbeat_while_running(self.heartbeat_every_s))
        try:
            return await work
        except NavigatorError as exc:
            raise to_application_error(exc) from exc
        finally:
            beat.cancel()

    @activity.defn(name="research.aggregate")
    async def aggregate(self, inp: AggregateInput) -> AggregateOutput:
        """Merge a step's findings into the run's (citations checked, duplicates dropped)."""

        async def work() -> AggregateOutput:
            count = LineCounter(await self._root(inp.repo_root))
            current = load_findings(self.store, inp.current_ref)
            new = load_findings(self.store, inp.step_ref)
            return await asyncio.to_thread(self._merge, inp, current, new, count)

        return await self._guard(work())

    def _merge(self, inp: AggregateInput, current: FindingsDoc, new: FindingsDoc,
               count: Callable[[str], int | None]) -> AggregateOutput:
        # the same claim found again (another round, another range) is one finding
        seen = {f.claim for f in current.findings}
        merged = list(current.findings)
        lines: list[str] = []
        dropped: list[str] = []
        for finding in new.findings:
            checked, why = _checked(finding, count)
            dropped += why
            if checked is None:
                continue
            checked = checked.model_copy(update={"step": inp.step_index, "source": inp.source
                                                 if finding.source == "executor" else finding.source})
            key = checked.claim
            if key in seen or len(merged) >= inp.max_findings:
                continue
            seen.add(key)
            merged.append(checked)
            lines.append(finding_line(checked.claim, [c.label() for c in checked.citations]))
        doc = FindingsDoc(findings=merged)
        ref = self.store.put_bytes(doc.model_dump_json().encode("utf-8"), MEDIA_JSON, "")
        files: list[str] = []
        cited: set[tuple[str, int]] = set()
        for f in merged:
            for c in f.citations:
                if c.path not in files:
                    files.append(c.path)
                cited.update((c.path, n) for n in c.lines())
        state = FindingsState(ref=ref, count=len(merged), files=files[:STATE_FILES], lines=len(cited),
                              dropped=len(dropped))
        return AggregateOutput(findings=state, added=len(lines), lines=[line[:300] for line in lines[:LOG_LINES]],
                               dropped=[d[:200] for d in dropped[:LOG_LINES]], host_queue=self._host_queue())

    @activity.defn(name="research.write_answer")
    async def write_answer(self, inp: WriteAnswerInput) -> WriteAnswerOutput:
        """Check every citation against the repository, then write answer.md and report.json atomically."""

        async def work() -> WriteAnswerOutput:
            count = LineCounter(await self._root(inp.repo_root))
            answer = self.store.get_bytes(inp.answer_ref).decode("utf-8") if inp.answer_ref else None
            findings = load_findings(self.store, inp.findings_ref).findings
            draft = answer_markdown(inp.question, inp.repo_root, answer, findings, inp.early)
            text, checks = await asyncio.to_thread(rewrite_citations, draft, count)
            return await asyncio.to_thread(self._write, inp, text, checks)

        return await self._guard(work())

    def _write(self, inp: WriteAnswerInput, text: str, checks: list[CitationCheck]) -> WriteAnswerOutput:
        out = Path(inp.out_dir).expanduser().resolve() / inp.workflow_id
        report = json.loads(inp.report_json)
        fixed = [c for c in checks if c.verdict != "ok"]
        report["citations"] = {
            "checked": len(checks),
            "written": len(parse_citations(text)),
            "fixed": [c.model_dump(mode="json") for c in fixed],
        }
        report_text = json.dumps(report, indent=2, sort_keys=True) + "\n"
        answer_ref = self.store.put_bytes(text.encode("utf-8"), MEDIA_MARKDOWN, f"answer for {inp.workflow_id}")
        report_ref = self.store.put_bytes(report_text.encode("utf-8"), MEDIA_JSON, f"report for {inp.workflow_id}")
        if self.write_files:
            atomic_write_bytes(out / "answer.md", text.encode("utf-8"))
            atomic_write_bytes(out / "report.json", report_text.encode("utf-8"))
        body = text.split("## Answer", 1)[-1].strip()
        return WriteAnswerOutput(answer_path=str(out / "answer.md"), report_path=str(out / "report.json"),
                                 answer_ref=answer_ref, report_ref=report_ref, citations=len(parse_citations(text)),
                                 fixed=len(fixed), summary=body[:600])
