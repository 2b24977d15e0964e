"""Rich renderings of turn reports, decision logs, results and run lists."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from durable_navigator.navcore.budget import format_usd
from durable_navigator.navcore.report import TurnReport
from durable_navigator.navcore.requests import ExplorationResult
from durable_navigator.navcore.investigation import InvestigationResult
from durable_navigator.navcore.research import ResearchResult
from durable_navigator.navcore.state import DecisionLogEntry
from durable_navigator.navcore.subagents import ChildRun

__all__ = [
    "progress_line",
    "turn_panel",
    "decision_table",
    "result_panel",
    "runs_table",
    "RunRow",
    "research_panel",
    "investigation_panel",
    "children_table",
]

#: interactive panels show this many diff lines; the rest is summarized
MAX_DIFF_LINES = 20
#: decision-log table cell width for reasoning
REASONING_COLUMN_CHARS = 80

RunRow = dict[str, Any]


def progress_line(report: TurnReport) -> Text:
    """One line of live progress, e.g. ``step 3 · thinking · $0.0012/$1.0000 · map 3120/8192``."""
    line = Text()
    line.append(f"step {report.step}", style="bold")
    line.append(f" · {report.status}", style="cyan")
    line.append(f" · {report.cost_total_usd}/{report.budget_usd}")
    if report.workflow in ("research", "investigation", "branches"):
        running = sum(1 for c in report.children if c.completed_normally is None)
        if report.workflow == "research":
            line.append(f" · {len(report.focus_areas)} cited files")
        if report.children:
            line.append(f" · subagents {len(report.children)} ({running} running)")
    else:
        line.append(f" · map {report.map_tokens}/{report.map_token_budget} tok")
    line.append(f" · {report.decisions} decisions")
    if report.focus_areas:
        line.append(" · focus " + ", ".join(report.focus_areas[:3]), style="dim")
    return line


def turn_panel(report: TurnReport, title: str | None = None) -> Panel:
    """The full turn report, with the proposed flight-plan diff, for interactive mode."""
    body: list[RenderableType] = [progress_line(report)]
    if report.reasoning:
        body.append(Text("\nReasoning: ", style="bold") + Text(report.reasoning))
    if report.proposed_diff:
        heading = "\nLast step:\n" if report.workflow in ("research", "investigation") else "\nProposed flight-plan change:\n"
        diff = Text(heading, style="bold")
        for line in report.proposed_diff[:MAX_DIFF_LINES]:
            style = "green" if line.startswith("+") else "red" if line.startswith("-") else "yellow"
            diff.append(f"  {line}\n", style=style)
        if len(report.proposed_diff) > MAX_DIFF_LINES:
            diff.append(f"  … {len(report.proposed_diff) - MAX_DIFF_LINES} more\n", style="dim")
        body.append(diff)
    elif report.workflow not in ("research", "investigation"):
        body.append(Text("\n(no flight-plan change proposed)", style="dim"))
    if report.workflow in ("research", "investigation") and report.stage_plan:
        body.append(Text("\n" + report.stage_plan.replace("### ", ""), style="dim"))
    return Panel(Group(*body), title=title or f"turn {report.awaiting_turn or report.step}", expand=False)


def decision_table(entries: Sequence[DecisionLogEntry]) -> Table:
    """The decision log as a table."""
    table = Table(title="decision log", show_lines=False)
    for column in ("step", "action", "verdict", "cost", "map tok", "change", "reasoning"):
        table.add_column(column, overflow="fold")
    for e in entries:
        reasoning = e.reasoning.replace("\n", " ")
        if len(reasoning) > REASONING_COLUMN_CHARS:
            reasoning = reasoning[: REASONING_COLUMN_CHARS - 1] + "…"
        table.add_row(
            str(e.step),
            e.action,
            e.verdict or "",
            format_usd(e.cost_micros),
            f"{e.map_tokens_before}→{e.map_tokens_after}",
            "; ".join(e.diff_lines[:3]) + (" …" if len(e.diff_lines) > 3 else ""),
            reasoning,
        )
    return table


def result_panel(result: ExplorationResult, ui_link: str | None) -> Panel:
    """What a finished run produced and cost."""
    usage = result.usage
    lines = [
        f"stop reason: [bold]{result.stop_reason.value}[/bold]"
        + (f" ({result.stop_detail})" if result.stop_detail else ""),
        f"iterations: {result.iterations} · decisions: {result.decisions}",
        f"cost: ${result.cost_usd:.4f} of ${result.max_usd:.4f} · tokens in {usage.input_tokens} "
        f"/ out {usage.output_tokens} / thinking {usage.thinking_tokens} / cached {usage.cached_tokens}",
    ]
    if result.map_metadata is not None:
        meta = result.map_metadata
        lines.append(f"final map: {meta.tokens_used}/{meta.token_budget} tokens, {meta.files_total} files")
    if result.context_path:
        lines.append(f"context pack: [bold green]{result.context_path}[/bold green]")
    if result.report_path:
        lines.append(f"report: {result.report_path}")
    if ui_link:
        lines.append(f"Web UI: {ui_link}")
    return Panel("\n".join(lines), title=result.workflow_id, expand=False)


def runs_table(rows: Sequence[RunRow]) -> Table:
    """``navigator ls`` output."""
    table = Table(title="navigator runs")
    table.add_column("workflow id", no_wrap=True)
    for column in ("status", "nav status", "repo", "iter", "cost $", "started", "goal"):
        table.add_column(column, overflow="fold")
    for row in rows:
        cost = row.get("cost_usd")
        table.add_row(
            row["workflow_id"],
            row["status"],
            row.get("navigator_status") or "",
            row.get("repo") or "",
            "" if row.get("iteration") is None else str(row["iteration"]),
            "" if cost is None else f"{cost:.4f}",
            (row.get("start_time") or "")[:19],
            (row.get("goal") or "")[:60],
        )
    return table


def research_panel(result: ResearchResult, ui_link: str | None) -> Panel:
    """What a finished research run produced and cost."""
    usage = result.usage
    lines = [
        f"stop reason: [bold]{result.stop_reason.value}[/bold]"
        + (f" ({result.stop_detail})" if result.stop_detail else "")
        + f" · completed normally: {'yes' if result.completed_normally else 'no'}",
        f"rounds: {result.rounds} · steps: {result.steps} · executor turns: {result.iterations} · findings: "
        f"{result.findings} · citations: {result.citations}"
        + (f" ({result.citations_fixed} fixed by the check)" if result.citations_fixed else ""),
        f"cost: ${result.cost_usd:.4f} of ${result.max_usd:.4f} · tokens in {usage.input_tokens} "
        f"/ out {usage.output_tokens} / thinking {usage.thinking_tokens} / cached {usage.cached_tokens}",
    ]
    for c in result.children:
        normal = "yes" if c.completed_normally else "no"
        lines.append(f"subagent {c.workflow_id} ({c.profile}): {c.stop_reason or c.status}, completed normally "
                     f"{normal}, {format_usd(c.cost_micros)} of a {format_usd(c.slice_micros)} slice")
    if result.answer_path:
        lines.append(f"answer: [bold green]{result.answer_path}[/bold green]")
    if result.report_path:
        lines.append(f"report: {result.report_path}")
    if ui_link:
        lines.append(f"Web UI: {ui_link}")
    return Panel("\n".join(lines), title=result.workflow_id, expand=False)


def investigation_panel(result: InvestigationResult, ui_link: str | None) -> Panel:
    """What a finished investigation produced and cost."""
    usage = result.usage
    lines = [
        f"stop reason: [bold]{result.stop_reason.value}[/bold]"
        + (f" ({result.stop_detail})" if result.stop_detail else "")
        + f" · completed normally: {'yes' if result.completed_normally else 'no'}",
        f"planning rounds: {result.plan_rounds} · stages: {result.stages_done} done of {result.stages} · "
        f"criteria met: {result.criteria_met}/{result.criteria_total} · subagents: {len(result.children)}",
        f"cost: ${result.cost_usd:.4f} of ${result.max_usd:.4f} · tokens in {usage.input_tokens} "
        f"/ out {usage.output_tokens}",
    ]
    for c in result.children:
        normal = "yes" if c.completed_normally else "no"
        lines.append(f"subagent {c.workflow_id} ({c.profile}): {c.stop_reason or c.status}, completed normally "
                     f"{normal}, {format_usd(c.cost_micros)} of a {format_usd(c.slice_micros)} slice")
    if result.report_path:
        lines.append(f"report: [bold green]{result.report_path}[/bold green] (+ {result.report_json_path})")
    if ui_link:
        lines.append(f"Web UI: {ui_link}")
    return Panel("\n".join(lines), title=result.workflow_id, expand=False)


def children_table(children: Sequence[ChildRun]) -> Table:
    """The subagents of a run (``status`` and ``log``)."""
    table = Table(title="subagents")
    for column in ("workflow id", "profile", "status", "iter", "cost / slice", "completed normally"):
        table.add_column(column, overflow="fold")
    for c in children:
        normal = "…" if c.completed_normally is None else ("yes" if c.completed_normally else "no")
        table.add_row(c.workflow_id, c.profile, c.stop_reason or c.status, str(c.iteration),
                      f"{format_usd(c.cost_micros)} / {format_usd(c.slice_micros)}", normal)
    return table
