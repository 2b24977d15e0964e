"""What an investigation shows: the stage table, the turn report, report.md and report.json (pure).

The same stage table is the ``status`` query's ``stage_plan``, the Web UI
details and the head of ``report.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from durable_navigator.navcore.run.budget import format_usd
from durable_navigator.navcore.planning.criteria import verdict_mark
from durable_navigator.navcore.run.findings import Finding
from durable_navigator.navcore.investigation.investigation import InvestigationState, StageRecord
from durable_navigator.navcore.navigator.report import TurnReport, markdown_text, reasoning_preview, shorten
from durable_navigator.navcore.run.sources import display_root

__all__ = ["stage_table", "investigation_turn_report", "investigation_details", "report_markdown", "report_dict",
           "criteria_counts", "criteria_unchecked"]


def criteria_counts(state: InvestigationState) -> tuple[int, int]:
    """(met, total) over the stages that ran (dropped and pending stages are not counted)."""
    checked = [c for s in state.stages if s.status in ("done", "failed") for c in s.criteria_status]
    return sum(1 for c in checked if c.met), sum(len(s.criteria) for s in state.stages if s.status in ("done", "failed"))


def criteria_unchecked(state: InvestigationState) -> int:
    """How many criteria of the stages that ran the checker could not check (reported, never counted met)."""
    return sum(1 for s in state.stages if s.status in ("done", "failed") for c in s.criteria_status if c.unchecked)


def _criteria_cell(stage: StageRecord) -> str:
    if not stage.criteria_status:
        return f"0/{len(stage.criteria)} checked"
    unchecked = sum(1 for c in stage.criteria_status if c.unchecked)
    return (f"{sum(1 for c in stage.criteria_status if c.met)}/{len(stage.criteria)} met"
            + (f", {unchecked} unchecked" if unchecked else ""))


def _cell(text: str) -> str:
    """A table cell as written (only a ``|``, which would end the cell, is escaped)."""
    return text.replace("|", "\\|")


def stage_table(state: InvestigationState, md: Callable[[str], str] = _cell) -> str:
    """The stages as a markdown table: status, loops, children, criteria, cost.

    ``md`` escapes each text cell: :func:`markdown_text` for the Web UI (``$`` pairs render as
    math there); by default only ``|``, so ``status`` and report.md show titles as written.
    """
    lines = ["| # | stage | status | loops | children | criteria | cost |", "|---|---|---|---|---|---|---|"]
    for s in state.stages:
        marker = "▶ " if s.index == state.current and s.status == "running" else ""
        lines.append(f"| {s.index} | {marker}{md(shorten(s.title, 60))} | {s.status} | {s.loops} | {len(s.children)} | "
                     f"{_criteria_cell(s)} | {md(format_usd(s.cost_micros + s.calls_micros))} |")
    return "\n".join(lines)


def investigation_turn_report(state: InvestigationState) -> TurnReport:
    """The investigation as the ``get_status`` report the CLI reads."""
    pending, run, log = state.steering.pending, state.run, state.log
    return TurnReport(
        step=run.iteration, status=run.status.value, mode=state.steering.mode.value,
        stop_reason=run.stop_reason.value if run.stop_reason else None,
        cost_this_turn_usd=format_usd(log.last_cost_micros), cost_total_usd=format_usd(state.ledger.spent_micros),
        budget_usd=format_usd(state.ledger.max_micros), map_tokens=0, map_token_budget=0, focus_areas=[],
        reasoning=log.last_reasoning,  # as logged: status shows it whole, the Web UI a preview
        reasoning_ref=log.last_decision_ref, proposed_diff=list(log.last_diff_lines),
        awaiting_turn=pending.turn if pending else None, awaiting_kind=pending.kind if pending else None,
        decisions=len(log.entries), stage_plan=stage_table(state) if state.stages else None, model=state.model,
        workflow="investigation", children=list(state.children),
    )


def investigation_details(state: InvestigationState) -> str:
    """Web UI details: goal, phase, cost, the stage table, warnings (every value escaped: ``$``
    pairs would render as math)."""
    md = markdown_text
    parts = [f"**investigation** · phase {md(state.phase)} · {md(state.run.status.value)} · "
             f"{md(format_usd(state.ledger.spent_micros))} of {md(format_usd(state.ledger.max_micros))}",
             f"goal: {md(shorten(state.goal, 300))}"]
    if state.plan_rounds:
        last = state.plan_rounds[-1]
        parts.append(f"planning: {len(state.plan_rounds)} round(s); last exit={md(str(last.exit))}: "
                     f"{md(shorten(last.reason, 200))}")
    if state.log.last_reasoning:
        parts.append(f"**Reasoning:** {md(reasoning_preview(state.log.last_reasoning))}")
    if state.stages:
        parts.append(stage_table(state, md))
    if state.warnings:
        parts.append("warnings:\n" + "\n".join(f"- {md(w)}" for w in state.warnings[-5:]))
    return "\n\n".join(parts)


def _unchecked_part(state: InvestigationState) -> str:
    n = criteria_unchecked(state)
    return f" ({n} unchecked: [?] below)" if n else ""


def report_markdown(state: InvestigationState, workflow_id: str, findings: dict[int, list[Finding]],
                    completed_normally: bool, records: dict[int, str] | None = None) -> str:
    """report.md: per-stage record, findings, criteria with evidence, open questions, cost per stage.

    ``records``: a stage's whole compressed record (from the artifact store); else its record in the state.
    """
    reason = state.run.stop_reason.value if state.run.stop_reason else "?"
    met, total = criteria_counts(state)
    out = [f"# Investigation: {state.goal}", "",
           f"- run: `{workflow_id}` · repository: `{display_root(state.repo_root)}` · model: `{state.model}`",
           f"- ended: **{reason}**" + (f" ({state.run.stop_detail})" if state.run.stop_detail else "")
           + ("" if completed_normally else " — not completed normally: the report holds what exists"),
           f"- criteria met: {met}/{total}{_unchecked_part(state)} · cost {format_usd(state.ledger.spent_micros)} of "
           f"{format_usd(state.ledger.max_micros)} · planning rounds {len(state.plan_rounds)}", "",
           "## Stages", "", stage_table(state), ""]
    for s in state.stages:
        out += [f"## Stage {s.index}: {s.title} ({s.status})", "", f"Task: {s.task}", ""]
        if s.status == "dropped":
            out += [f"Dropped: {s.reflection or 'by a reflection'}", ""]
            continue
        if s.child_problem:
            out += [f"Worker problem: {s.child_problem}", ""]
        record = (records or {}).get(s.index) or s.record
        if record:
            out += ["### Record", "", record, ""]
        out += ["### Criteria", ""]
        for c in s.criteria_status or []:
            ev = ", ".join(c.evidence) or "no evidence"
            out.append(f"- {verdict_mark(c.status)} {c.criterion} — {ev}" + (f" ({c.note})" if c.note else ""))
            out += [f"  - dropped evidence: {d}" for d in c.dropped]
        if not s.criteria_status:
            out += [f"- [ ] {c} — not checked" for c in s.criteria]
        items = findings.get(s.index, [])
        out += ["", f"### Findings ({len(items)})", ""]
        out += [f"- {f.claim} [{', '.join(c.label() for c in f.citations)}]" for f in items] or ["- none"]
        if s.reviews:
            out += ["", "### Review", ""] + [f"- {r}" for r in s.reviews]
        if s.branch_scores:
            out += ["", "### Branches", ""] + [
                f"- {'kept ' if b.kept else ''}`{b.workflow_id}` ({b.strategy}): covered {b.covered} goal terms, "
                f"{b.tokens} tokens, score {b.score:.4f}" for b in s.branch_scores]
        if s.reflection:
            out += ["", f"Reflection: {s.reflection}"]
        out += ["", f"Cost: workers {format_usd(s.cost_micros)}, own calls {format_usd(s.calls_micros)}; "
                f"children: {', '.join(f'`{c}`' for c in s.children) or 'none'}", ""]
    open_q = [f"stage {s.index}: {c.criterion}" + (" (unchecked: the checker could not verify it)" if c.unchecked
                                                     else "") for s in state.stages for c in s.criteria_status
              if not c.met]
    open_q += [f"stage {s.index} ({s.title}) did not run" for s in state.stages if s.status in ("pending", "skipped")]
    out += ["## Open questions", ""] + ([f"- {q}" for q in open_q] or ["- none"]) + [""]
    if state.warnings:
        out += ["## Warnings", ""] + [f"- {w}" for w in state.warnings] + [""]
    return "\n".join(out)


def report_dict(state: InvestigationState, workflow_id: str, completed_normally: bool) -> dict[str, Any]:
    """report.json: the run's figures and every stage's verdicts."""
    met, total = criteria_counts(state)
    return {
        "workflow_id": workflow_id, "workflow": "investigation", "goal": state.goal, "repo": state.repo_root,
        "model": state.model, "stop_reason": state.run.stop_reason.value if state.run.stop_reason else None,
        "stop_detail": state.run.stop_detail, "completed_normally": completed_normally,
        "cost_micros": state.ledger.spent_micros, "max_micros": state.ledger.max_micros,
        "criteria_met": met, "criteria_total": total, "criteria_unchecked": criteria_unchecked(state),
        "plan_rounds": [r.model_dump(mode="json") for r in state.plan_rounds],
        "stages": [s.model_dump(mode="json", exclude={"findings_ref"}) for s in state.stages],
        "children": [c.model_dump(mode="json") for c in state.children],
        "warnings": list(state.warnings), "decisions": len(state.log.entries),
        "continued_runs": state.run.continued_runs,
    }
