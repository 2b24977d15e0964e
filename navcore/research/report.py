"""What a research run shows: its turn report (``get_status``), Web UI details, plan and report.json."""

from __future__ import annotations

from typing import Any

from durable_navigator.navcore.run.budget import format_usd, micros_to_usd
from durable_navigator.navcore.navigator.report import (
    TurnReport,
    code_span,
    markdown_text,
    reasoning_preview,
    shorten,
    steering_lines,
)
from durable_navigator.navcore.research.research import ResearchState, ResearchView
from durable_navigator.navcore.run.subagents import ChildRun

__all__ = [
    "research_turn_report",
    "research_plan_markdown",
    "children_markdown",
    "research_details_markdown",
    "research_report_dict",
    "research_view",
]

#: cited files listed as the report's focus
_FOCUS_FILES = 10


def research_plan_markdown(state: ResearchState) -> str | None:
    """The research plan (every round's steps) with each step's status."""
    if not state.steps:
        return None
    lines = [f"### Research plan · round {state.round + 1} · phase {state.phase}"]
    for step in state.steps:
        where = f" → subagent `{step.profile}`" if step.profile else ""
        stats = f" ({step.turns} turns, {step.findings} findings)" if step.turns or step.findings else ""
        current = " ← current" if step.index == state.next_step and state.phase == "execute" else ""
        verdict = f" [{step.verdict}]" if step.verdict else ""
        lines.append(f"{step.index + 1}. [{step.status}] r{step.round + 1}: {step.description}{where}{stats}"
                     f"{verdict}{current}")
    if state.missing:
        lines.append(f"Missing (refinery): {state.missing}")
    return "\n".join(lines)


def research_turn_report(state: ResearchState) -> TurnReport:
    """The research run as the ``get_status`` turn report the CLI and tests read."""
    pending, run, log = state.steering.pending, state.run, state.log
    meta = state.map.metadata
    return TurnReport(
        step=run.iteration,
        status=run.status.value,
        mode=state.steering.mode.value,
        stop_reason=run.stop_reason.value if run.stop_reason else None,
        cost_this_turn_usd=format_usd(log.last_cost_micros),
        cost_total_usd=format_usd(state.ledger.spent_micros),
        budget_usd=format_usd(state.ledger.max_micros),
        map_tokens=meta.tokens_used if meta else 0,
        map_token_budget=state.map.flight_plan.token_budget,
        focus_areas=state.findings.files[:_FOCUS_FILES],
        reasoning=log.last_reasoning,  # as logged: status shows it whole, the Web UI a preview
        reasoning_ref=log.last_decision_ref,
        proposed_diff=list(log.last_diff_lines),
        awaiting_turn=pending.turn if pending else None,
        awaiting_kind=pending.kind if pending else None,
        decisions=len(log.entries),
        stage_plan=research_plan_markdown(state),
        planning_fallback=state.plan_fallback,
        model=state.model,
        workflow="research",
        children=list(state.children),
    )


def children_markdown(children: list[ChildRun]) -> str | None:
    """The subagents as a markdown table (Web UI details)."""
    if not children:
        return None
    lines = ["| subagent | profile | status | iter | cost / slice | completed normally |", "|---|---|---|---|---|---|"]
    for c in children:
        normal = "…" if c.completed_normally is None else ("yes" if c.completed_normally else "no")
        lines.append(f"| {code_span(c.workflow_id)} | {markdown_text(c.profile)} | {markdown_text(c.status)} | "
                     f"{c.iteration} | {markdown_text(format_usd(c.cost_micros))} / "
                     f"{markdown_text(format_usd(c.slice_micros))} | {normal} |")
    return "\n".join(lines)


def research_details_markdown(report: TurnReport, question: str, state: ResearchState) -> str:
    """The Web UI's current details of a research run (every value escaped: ``$`` pairs would render as math)."""
    md, f = markdown_text, state.findings
    lines = [
        f"### Research · {md(report.status)} · round {state.round + 1} · turn {report.step}",
        f"**Question:** {md(shorten(question, 200))}",
        f"**Cost:** {md(report.cost_total_usd)} of {md(report.budget_usd)} "
        f"(last turn {md(report.cost_this_turn_usd)}) · **Findings:** {f.count} "
        f"({f.lines} cited lines in {len(f.files)} files) · **Calls:** {state.calls_used} · **Mode:** {md(report.mode)}",
    ]
    lines += steering_lines(report, plan="the research plan", turn="step turn")
    if report.focus_areas:
        lines.append("**Cited:** " + ", ".join(code_span(p) for p in report.focus_areas))
    if report.proposed_diff:
        lines += ["**Last step:**", *(f"- {code_span(d)}" for d in report.proposed_diff[:12])]
    if report.reasoning:
        lines.append(f"**Reasoning:** {md(reasoning_preview(report.reasoning))}")
    if report.stage_plan:
        head, *steps = report.stage_plan.splitlines()
        # a blank line first: the reasoning may end in a list item the heading would join
        lines += ["", f"### {md(head.removeprefix('### '))}", *(f"- {md(step)}" for step in steps)]
    table = children_markdown(state.children)
    if table:
        lines += ["**Subagents:**", table]
    return "\n".join(lines)


def research_view(state: ResearchState) -> ResearchView:
    """The ``get_research`` query's answer."""
    return ResearchView(question=state.question, phase=state.phase, round=state.round, steps=list(state.steps),
                        findings=state.findings, missing=state.missing, children=list(state.children),
                        answer=state.answer)


def research_report_dict(state: ResearchState, workflow_id: str, completed_normally: bool) -> dict[str, Any]:
    """The content of ``report.json`` (the write activity adds the citation checks)."""
    s = state
    return {
        "kind": "research",
        "question": s.question,
        "repo_root": s.repo_root,
        "model": s.model,
        "workflow_id": workflow_id,
        "stop_reason": s.run.stop_reason.value if s.run.stop_reason else None,
        "stop_detail": s.run.stop_detail,
        "completed_normally": completed_normally,
        "rounds": s.round + 1,
        "iterations": s.run.iteration,
        "calls_used": s.calls_used,
        "steps": [step.model_dump(mode="json") for step in s.steps],
        "plan_fallback": s.plan_fallback,
        "missing": s.missing,
        "findings": s.findings.model_dump(mode="json"),
        "cost_usd": str(micros_to_usd(s.ledger.spent_micros)),
        "max_usd": str(micros_to_usd(s.ledger.max_micros)),
        "ledger": s.ledger.model_dump(mode="json"),
        "tokens": s.ledger.total_usage().model_dump(mode="json"),
        "children": [c.model_dump(mode="json") for c in s.children],
        "decisions": [e.model_dump(mode="json") for e in s.log.entries],
        "notes": [n.model_dump(mode="json") for n in s.steering.notes],
        "continued_runs": s.run.continued_runs,
    }
