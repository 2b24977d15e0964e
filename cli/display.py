"""Renderings of turn reports, decision logs, results and run lists — readable at 80 columns and piped.

Two kinds of output, printed differently:

* panels and blocks (:func:`print_block`): word-wrapped to the console width, never
  cropped — a stop reason or the model's reasoning is shown whole;
* lines a user copies (Web UI links, paths, ids): printed with ``soft_wrap=True``,
  so rich never breaks them; the terminal wraps them and a copy stays one piece.

The decision log and the run list are blocks of short lines rather than wide tables:
a table squeezed to 80 columns wraps one word per line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from durable_navigator.navcore.batch.branches import BranchExploreResult
from durable_navigator.navcore.run.budget import format_usd
from durable_navigator.navcore.navigator.report import TurnReport
from durable_navigator.navcore.navigator.activity_io import PackFigures
from durable_navigator.navcore.navigator.requests import ExplorationResult
from durable_navigator.navcore.investigation.investigation import InvestigationResult
from durable_navigator.navcore.research.research import ResearchResult
from durable_navigator.navcore.run_kinds import BRANCHES, EXPLORE, INVESTIGATION, RESEARCH, RunKind
from durable_navigator.navcore.navigator.state import DecisionLogEntry
from durable_navigator.navcore.run.subagents import ChildRun

__all__ = [
    "print_block",
    "plan_text",
    "progress_line",
    "turn_panel",
    "last_turn_block",
    "decision_lines",
    "print_lines",
    "result_panel",
    "runs_table",
    "runs_blocks",
    "RunRow",
    "WIDE_COLUMNS",
    "research_panel",
    "investigation_panel",
    "branches_panel",
    "children_blocks",
    "RESULT_PANELS",
    "run_result_panel",
    "result_paths",
]

#: workflows whose turns are steps of a stage plan (no flight-plan change to approve)
_STAGED = (RESEARCH.report_name, INVESTIGATION.report_name)

#: interactive panels show this many diff lines; the rest is summarized
MAX_DIFF_LINES = 20
#: the run list is a table from this console width up, blocks below
WIDE_COLUMNS = 120
#: goal text shown per run in ``ls``
GOAL_CHARS = 120

RunRow = dict[str, Any]


def print_block(console: Console, renderable: RenderableType) -> None:
    """Print a panel / block word-wrapped to the console width (nothing cropped)."""
    console.print(renderable, soft_wrap=False)


def progress_line(report: TurnReport) -> Text:
    """One line of live progress, e.g. ``step 3 · thinking · $0.0012/$1.0000 · map 3120/8192 tok``."""
    line = Text()
    line.append(f"step {report.step}", style="bold")
    line.append(f" · {report.status}", style="cyan")
    line.append(f" · {report.cost_total_usd}/{report.budget_usd}")
    if report.workflow in (RESEARCH.report_name, INVESTIGATION.report_name, BRANCHES.report_name):
        running = sum(1 for c in report.children if c.completed_normally is None)
        if report.workflow == RESEARCH.report_name:
            line.append(f" · {len(report.focus_areas)} cited files")
        if report.children:
            line.append(f" · subagents {len(report.children)} ({running} running)")
    else:
        line.append(f" · map {report.map_tokens}/{report.map_token_budget} tok")
    line.append(f" · {report.decisions} decisions")
    if report.focus_areas:
        line.append(" · focus " + ", ".join(report.focus_areas[:3]), style="dim")
    return line


#: ``**bold**`` in a plan line; never the ``**`` of a glob such as ``src/**``
_BOLD = re.compile(r"(?<![\w/*])\*\*(?=[^\s*])(.+?)(?<=[^\s/*])\*\*(?![\w/*])")


def plan_text(markdown: str, *, current: bool = True) -> str:
    """A stage or research plan (markdown, as the Web UI shows it) as terminal text: no ``###``
    heading marks or ``**`` emphasis; without the ``← current`` marker unless ``current``."""
    lines = [_BOLD.sub(r"\1", line.removeprefix("### ")) for line in markdown.splitlines()]
    return "\n".join(lines if current else (line.replace(" ← current", "") for line in lines))


def _diff_text(lines: Sequence[str], heading: str) -> Group:
    """The heading, then each line indented (a wrapped line keeps its indent)."""
    rows: list[RenderableType] = [Text(heading, style="bold")]
    for line in lines[:MAX_DIFF_LINES]:
        style = "green" if line.startswith("+") else "red" if line.startswith("-") else "yellow"
        rows.append(Padding(Text(line, style=style), (0, 0, 0, 2)))
    if len(lines) > MAX_DIFF_LINES:
        rows.append(Padding(Text(f"… {len(lines) - MAX_DIFF_LINES} more", style="dim"), (0, 0, 0, 2)))
    return Group(*rows)


def _cost_line(report: TurnReport) -> Text:
    return Text(f"cost of this turn {report.cost_this_turn_usd} · total {report.cost_total_usd} of "
                f"{report.budget_usd} · map {report.map_tokens}/{report.map_token_budget} tokens")


def turn_panel(report: TurnReport, title: str | None = None) -> Panel:
    """The turn awaiting a verdict: its cost, the model's reasoning in full, the proposed change."""
    body: list[RenderableType] = [_cost_line(report)]
    if report.focus_areas:
        body.append(Text("focus: " + ", ".join(report.focus_areas[:6]), style="dim"))
    if report.reasoning:
        body.append(Text.assemble(("Reasoning: ", "bold"), report.reasoning))
    if report.proposed_diff:
        heading = "Last step:" if report.workflow in _STAGED else "Proposed flight-plan change:"
        body.append(_diff_text(report.proposed_diff, heading))
    elif report.workflow not in _STAGED and report.awaiting_kind == "plan":
        body.append(Text("the stage plan is printed above: approve it, or reject it with feedback", style="dim"))
    elif report.workflow not in _STAGED:
        body.append(Text("(no flight-plan change proposed)", style="dim"))
    if report.workflow in _STAGED and report.stage_plan:
        body.append(Text(plan_text(report.stage_plan), style="dim"))
    return Panel(Group(*body), title=title or f"turn {report.awaiting_turn or report.step}", title_align="left",
                 expand=False)


def last_turn_block(report: TurnReport) -> Group:
    """The latest turn of a run that is not waiting (what ``status`` shows a remote observer)."""
    body: list[RenderableType] = [_cost_line(report)]
    if report.reasoning:
        body.append(Text.assemble((f"Last reasoning (step {report.step}): ", "bold"), report.reasoning))
    if report.proposed_diff:
        body.append(_diff_text(report.proposed_diff, "Last flight-plan change:"))
    return Group(*body)


def _entry_head(e: DecisionLogEntry) -> Text:
    head = Text()
    head.append(f"step {e.step}", style="bold")
    head.append(f" · {e.action}")
    if e.verdict:
        head.append(f" · {e.verdict}", style="green" if e.verdict == "approve" else "red")
    head.append(f" · {format_usd(e.cost_micros)} · map {e.map_tokens_before}→{e.map_tokens_after} tok")
    return head


def decision_lines(entries: Sequence[DecisionLogEntry]) -> list[tuple[int, Text]]:
    """The decision log as ``(indent, line)``: per entry a head line, the change, the reasoning
    and any feedback or error, then a blank line (see :func:`print_lines`)."""
    out: list[tuple[int, Text]] = []
    for e in entries:
        out.append((0, _entry_head(e)))
        for line in e.diff_lines[:MAX_DIFF_LINES]:
            style = "green" if line.startswith("+") else "red" if line.startswith("-") else "yellow"
            out.append((2, Text(line, style=style)))
        if len(e.diff_lines) > MAX_DIFF_LINES:
            out.append((2, Text(f"… {len(e.diff_lines) - MAX_DIFF_LINES} more", style="dim")))
        if e.reasoning:
            out.append((2, Text(" ".join(e.reasoning.split()), style="dim")))
        if e.feedback:
            out.append((2, Text(f"feedback: {e.feedback}")))
        if e.error:
            out.append((2, Text(f"error: {e.error}", style="red")))
        out.append((0, Text("")))
    return out


def print_lines(console: Console, lines: Sequence[tuple[int, Text]]) -> None:
    """Indented lines: on a terminal word-wrapped with the indent kept; piped, one line each."""
    for indent, text in lines:
        if console.is_terminal:
            console.print(Padding(text, (0, 0, 0, indent)), soft_wrap=False)
        else:
            console.print(Text(" " * indent) + text, soft_wrap=True)


def result_panel(result: ExplorationResult) -> Panel:
    """What a finished run produced and cost (links and paths are printed after it, whole)."""
    usage = result.usage
    lines = [
        Text.assemble("stop reason: ", (result.stop_reason.value, "bold"),
                      f" ({result.stop_detail})" if result.stop_detail else ""),
        Text(f"iterations: {result.iterations} · decisions: {result.decisions}"),
        Text(f"cost: ${result.cost_usd:.4f} of ${result.max_usd:.4f} · tokens in {usage.input_tokens} "
             f"/ out {usage.output_tokens} / thinking {usage.thinking_tokens} / cached {usage.cached_tokens}"),
    ]
    if result.map_metadata is not None:
        meta = result.map_metadata
        lines.append(Text(f"final map: {meta.tokens_used}/{meta.token_budget} tokens, {meta.files_total} files"))
    if result.pack is not None:
        lines.append(Text(_pack_line(result.pack)))
    return Panel(Group(*lines), title=result.workflow_id, title_align="left", expand=False)


def _pack_line(pack: PackFigures) -> str:
    """context.md against the budget, and what fitting did (the rest is in report.json)."""
    if pack.map_left_out:
        what = "no room for the map"
    elif pack.map_rerendered:
        what = f"map {pack.map_tokens}, rendered at {pack.map_token_budget} to fit"
    else:
        what = f"map {pack.map_tokens}"
    line = f"context.md: {pack.tokens}/{pack.token_budget} tokens ({what})"
    return line + (f"; shortened: {', '.join(pack.shortened)} (whole in report.json)" if pack.shortened else "")


def _status_of(row: RunRow) -> str:
    nav = row.get("navigator_status")
    return f"{row['status']}: {nav}" if nav and nav != row["status"] else row["status"]


def runs_table(rows: Sequence[RunRow]) -> Table:
    """``navigator ls`` on a wide console."""
    table = Table(title="navigator runs")
    table.add_column("workflow id", no_wrap=True)
    for column in ("status", "iter", "cost $", "started", "goal"):
        table.add_column(column, overflow="fold")
    for row in rows:
        cost = row.get("cost_usd")
        table.add_row(
            row["workflow_id"],
            _status_of(row),
            "" if row.get("iteration") is None else str(row["iteration"]),
            "" if cost is None else f"{cost:.4f}",
            (row.get("start_time") or "")[:16].replace("T", " "),
            (row.get("goal") or "")[:GOAL_CHARS],
        )
    return table


def runs_blocks(rows: Sequence[RunRow]) -> list[str]:
    """``navigator ls`` at 80 columns or piped: a line per run, then its goal indented."""
    lines: list[str] = []
    for row in rows:
        cost, iteration = row.get("cost_usd"), row.get("iteration")
        head = [row["workflow_id"], _status_of(row)]
        if iteration is not None:
            head.append(f"iter {iteration}")
        if cost is not None:
            head.append(f"${cost:.4f}")
        if row.get("start_time"):
            head.append(str(row["start_time"])[:16].replace("T", " "))
        lines.append(" · ".join(head))
        goal = " ".join((row.get("goal") or "").split())
        if goal:
            lines.append(f"  {goal[:GOAL_CHARS]}")
    return lines


def research_panel(result: ResearchResult) -> Panel:
    """What a finished research run produced and cost (links and paths are printed after it, whole)."""
    usage = result.usage
    lines = [
        Text.assemble("stop reason: ", (result.stop_reason.value, "bold"),
                      f" ({result.stop_detail})" if result.stop_detail else "",
                      f" · completed normally: {'yes' if result.completed_normally else 'no'}"),
        Text(f"rounds: {result.rounds} · steps: {result.steps} · executor turns: {result.iterations} · findings: "
             f"{result.findings} · citations: {result.citations}"
             + (f" ({result.citations_fixed} fixed by the check)" if result.citations_fixed else "")),
        Text(f"cost: ${result.cost_usd:.4f} of ${result.max_usd:.4f} · tokens in {usage.input_tokens} "
             f"/ out {usage.output_tokens} / thinking {usage.thinking_tokens} / cached {usage.cached_tokens}"),
    ]
    for c in result.children:
        normal = "yes" if c.completed_normally else "no"
        lines.append(Text(f"subagent {c.workflow_id} ({c.profile}): {c.stop_reason or c.status}, completed "
                          f"normally {normal}, {format_usd(c.cost_micros)} of a {format_usd(c.slice_micros)} slice"))
    return Panel(Group(*lines), title=result.workflow_id, title_align="left", expand=False)


def investigation_panel(result: InvestigationResult) -> Panel:
    """What a finished investigation produced and cost (links and paths are printed after it, whole)."""
    usage = result.usage
    lines = [
        Text.assemble("stop reason: ", (result.stop_reason.value, "bold"),
                      f" ({result.stop_detail})" if result.stop_detail else "",
                      f" · completed normally: {'yes' if result.completed_normally else 'no'}"),
        Text(f"planning rounds: {result.plan_rounds} · stages: {result.stages_done} done of {result.stages} · "
             f"criteria met: {result.criteria_met}/{result.criteria_total}"
             + (f" ({result.criteria_unchecked} unchecked)" if result.criteria_unchecked else "")
             + f" · subagents: {len(result.children)}"),
        Text(f"cost: ${result.cost_usd:.4f} of ${result.max_usd:.4f} · tokens in {usage.input_tokens} "
             f"/ out {usage.output_tokens}"),
    ]
    for c in result.children:
        normal = "yes" if c.completed_normally else "no"
        lines.append(Text(f"subagent {c.workflow_id} ({c.profile}): {c.stop_reason or c.status}, completed "
                          f"normally {normal}, {format_usd(c.cost_micros)} of a {format_usd(c.slice_micros)} slice"))
    return Panel(Group(*lines), title=result.workflow_id, title_align="left", expand=False)


def branches_panel(result: BranchExploreResult) -> Panel:
    """Every branch's score and which one was kept (the kept pack's path is printed after it, whole)."""
    lines = [Text.assemble("stop reason: ", (result.stop_reason.value, "bold"),
                           f" ({result.stop_detail})" if result.stop_detail else "",
                           f" · completed normally: {'yes' if result.completed_normally else 'no'}"),
             Text(f"cost: ${result.cost_usd:.4f} of ${result.max_usd:.4f}")]
    for b in result.scores:
        c = next((c for c in result.children if c.workflow_id == b.workflow_id), None)
        line = Text.assemble(("kept ", "bold green") if b.kept else "",
                             f"{b.workflow_id} ({b.strategy}): {b.covered} goal identifiers in {b.tokens} tokens "
                             f"→ score {b.score}")
        if c is not None:
            line.append(f", {c.stop_reason}, {format_usd(c.cost_micros)} of a {format_usd(c.slice_micros)} slice")
        lines.append(line)
    return Panel(Group(*lines), title=result.workflow_id, title_align="left", expand=False)


def children_blocks(children: Sequence[ChildRun]) -> list[str]:
    """The subagents of a run (``status`` and ``log``): a line each, readable at 80 columns and piped."""
    lines = ["subagents:"]
    for c in children:
        normal = "…" if c.completed_normally is None else ("yes" if c.completed_normally else "no")
        lines.append(f"  {c.workflow_id} · {c.profile} · {c.stop_reason or c.status} · iter {c.iteration} · "
                     f"{format_usd(c.cost_micros)} of {format_usd(c.slice_micros)} · completed normally {normal}")
    return lines


#: each kind of run's result panel, keyed by its workflow type (``navcore/run_kinds.py``)
RESULT_PANELS: dict[str, Callable[[Any], Panel]] = {
    EXPLORE.workflow_type: result_panel, RESEARCH.workflow_type: research_panel,
    INVESTIGATION.workflow_type: investigation_panel, BRANCHES.workflow_type: branches_panel,
}


def run_result_panel(kind: RunKind, result: Any) -> Panel:
    """The panel of a finished run of ``kind`` (``result``: its result model, or its JSON dump)."""
    if not isinstance(result, kind.result_type):
        result = kind.result_type.model_validate(result)
    return RESULT_PANELS[kind.workflow_type](result)


def result_paths(result: Any) -> list[str]:
    """The lines naming a finished run's files (``navigator result``): printed whole, after its panel."""
    if isinstance(result, ResearchResult):
        named = [("answer", result.answer_path), ("report", result.report_path)]
    elif isinstance(result, InvestigationResult):
        named = [("report", result.report_path), ("report.json", result.report_json_path)]
    elif isinstance(result, BranchExploreResult):
        named = [("context pack", result.context_path)]
    else:
        named = [("context pack", result.context_path), ("report", result.report_path)]
    return [f"{label}: {path}" for label, path in named if path]
