"""research.aggregate and research.write_answer: citations checked against the repository before anything is kept."""

from __future__ import annotations

import json
import os
from pathlib import Path

from durable_navigator.activities.artifacts import LocalArtifactStore
from durable_navigator.activities.research import LineCounter, ResearchActivities
from durable_navigator.activities.research_calls import load_findings
from durable_navigator.navcore.run.citations import Citation, parse_citations
from durable_navigator.navcore.run.findings import Finding, FindingsDoc
from durable_navigator.navcore.research.research import AggregateInput, WriteAnswerInput

from tests.support import FIXTURE_REPO


class _Engine:
    def __init__(self, root: Path) -> None:
        self.root = root


def _acts(tmp_path: Path, root: Path = FIXTURE_REPO) -> tuple[ResearchActivities, LocalArtifactStore]:
    store = LocalArtifactStore(tmp_path / "artifacts")

    async def engines(repo_root: str) -> _Engine:
        return _Engine(root)

    return ResearchActivities(store, engines), store


def _put(store: LocalArtifactStore, *findings: Finding):  # type: ignore[no-untyped-def]
    return store.put_bytes(FindingsDoc(findings=list(findings)).model_dump_json().encode(), "application/json")


def _f(claim: str, *cites: str, quote: str = "") -> Finding:
    return Finding(claim=claim, citations=[c for text in cites for c in parse_citations(text)], quote=quote)


def test_line_counter_refuses_escapes_and_binaries(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x\ny\n")
    (tmp_path / "b.bin").write_bytes(b"\0\1\2")
    outside = tmp_path.parent / f"{tmp_path.name}-outside.py"
    outside.write_text("secret\n")
    (tmp_path / "link.py").symlink_to(outside)
    count = LineCounter(tmp_path)
    assert count("a.py") == 2 and count("missing.py") is None and count("b.bin") is None
    assert count("../x.py") is None and count("/etc/passwd") is None and count("link.py") is None
    os.unlink(outside)


async def test_aggregate_drops_missing_lines_clamps_ranges_and_dedupes(tmp_path: Path) -> None:
    acts, store = _acts(tmp_path)
    first = await acts.aggregate(AggregateInput(repo_root=str(FIXTURE_REPO), step_index=0, step_ref=_put(
        store, _f("after_call records usage", "src/budgetkit/plugin.py:26-29"),
        _f("a ghost", "src/budgetkit/ghost.py:1-2"),
        _f("past the end", "src/budgetkit/plugin.py:30-90"))))
    assert first.added == 2 and first.findings.count == 2 and first.findings.dropped == 1
    assert any("ghost.py" in d for d in first.dropped)
    doc = load_findings(store, first.findings.ref)
    assert doc.findings[1].citations == [Citation(path="src/budgetkit/plugin.py", start=30, end=33)]
    assert first.findings.files == ["src/budgetkit/plugin.py"] and first.findings.lines == 4 + 4
    # the same claim again (another round, another range) is not a new finding
    second = await acts.aggregate(AggregateInput(
        repo_root=str(FIXTURE_REPO), step_index=1, current_ref=first.findings.ref,
        step_ref=_put(store, _f("after_call records usage", "src/budgetkit/plugin.py:27-28"),
                      _f("Ledger sums tokens", "src/budgetkit/ledger.py:34-37")), source="subagent:child-1"))
    assert second.added == 1 and second.findings.count == 3
    last = load_findings(store, second.findings.ref).findings[-1]
    assert (last.step, last.source) == (1, "subagent:child-1")


async def test_write_answer_checks_every_citation_of_the_whole_document(tmp_path: Path) -> None:
    acts, store = _acts(tmp_path)
    answer = store.put_bytes(b"Twice: src/budgetkit/plugin.py:26-29 and src/budgetkit/plugin.py:31-99; "
                             b"also src/nope.py:1-3 and ../../etc/passwd:1-2.", "text/markdown")
    findings = _put(store, _f("on_stream_end calls after_call", "src/budgetkit/plugin.py:31-33",
                              quote="33:         self.after_call(model, usage)"))
    out = await acts.write_answer(WriteAnswerInput(
        out_dir=str(tmp_path / "out"), workflow_id="wf-1", question="why twice?", repo_root=str(FIXTURE_REPO),
        answer_ref=answer, findings_ref=findings, report_json=json.dumps({"kind": "research"})))
    text = Path(out.answer_path).read_text()
    assert text.startswith("# why twice?") and "## Answer" in text and "## Findings" in text
    assert "self.after_call(model, usage)" in text  # the quote
    count = LineCounter(FIXTURE_REPO)
    for cite in parse_citations(text):
        lines = count(cite.path)
        assert lines is not None and cite.end <= lines, cite
    assert "src/budgetkit/plugin.py:31-33" in text and "nope.py" not in text and "passwd" not in text
    report = json.loads(Path(out.report_path).read_text())
    verdicts = sorted(c["verdict"] for c in report["citations"]["fixed"])
    assert verdicts == ["clamped", "removed", "removed"] and out.fixed == 3 and report["kind"] == "research"
    assert store.get_bytes(out.answer_ref).decode() == text


async def test_without_an_answer_the_findings_are_the_answer(tmp_path: Path) -> None:
    acts, store = _acts(tmp_path)
    out = await acts.write_answer(WriteAnswerInput(
        out_dir=str(tmp_path / "out"), workflow_id="wf-2", question="q", repo_root=str(FIXTURE_REPO),
        findings_ref=_put(store, _f("BudgetPlugin refuses calls", "src/budgetkit/plugin.py:21-24")),
        report_json="{}", early="budget_exhausted: the next call needs more"))
    text = Path(out.answer_path).read_text()
    assert "ended early: budget_exhausted" in text and "the findings below are what the research established" in text
    assert "src/budgetkit/plugin.py:21-24" in text and out.citations == 1
