"""Turn reports (the ``get_status`` query, Web UI details) and plan diffs."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from durable_navigator.navcore.run.artifacts import ArtifactRef
from durable_navigator.navcore.run.budget import format_usd
from durable_navigator.navtypes.flightplan import FlightPlan, FlightPlanUpdate, Level
from durable_navigator.navcore.planning.planning import plan_markdown
from durable_navigator.navcore.model.routing import switch_line
from durable_navigator.navcore.navigator.state import DecisionLogEntry, MessageNote, NavigatorState, StageState
from durable_navigator.navcore.run.subagents import ChildRun
from durable_navigator.navcore.run.sources import display_root

__all__ = [
    "TurnReport",
    "DecisionLogView",
    "update_diff_lines",
    "plan_diff_lines",
    "build_turn_report",
    "turn_report_markdown",
    "steering_lines",
    "short_action_label",
    "shorten",
    "markdown_text",
    "code_span",
    "reasoning_preview",
    "run_summary",
    "run_details_markdown",
]

#: the Web UI details show this much of the reasoning (``get_status`` carries all the log keeps)
DETAILS_REASONING_CHARS = 600
#: reasoning characters of a decision kept in history (the full decision is an artifact)
HISTORY_REASONING_CHARS = 400
#: characters that change the meaning of markdown text; ``$`` pairs turn into math in the Web UI
_MARKDOWN_SPECIALS = frozenset("\\`*_[]<>$|~#")
#: routing switches shown in a turn report (the decision log and report.json keep all)
REPORT_SWITCHES = 5


def shorten(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters with a visible marker."""
    text = text.strip()
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


def markdown_text(text: str) -> str:
    """``text`` as literal markdown: every character that markdown would interpret is escaped.

    The Temporal Web UI renders details with math support: ``$0.0000 of $1.0000``
    became ``\\(0.0000 of \\)1.0000``; ``\\$`` shows a dollar sign. ``<tag>`` would be
    swallowed as HTML, ``*`` and ``_`` start emphasis.
    """
    return "".join(f"\\{ch}" if ch in _MARKDOWN_SPECIALS else ch for ch in text)


def _dollars(markdown: str) -> str:
    """Markdown written by us or the model (stage plans) with its dollar signs made literal."""
    return markdown.replace("\\$", "$").replace("$", "\\$")


def update_diff_lines(update: FlightPlanUpdate) -> list[str]:
    """Readable lines for an update, e.g. ``+ rule src/budget/** → L4``."""
    lines: list[str] = []
    lines += [f"+ rule {r.glob} → L{int(r.level)}" for r in update.set_rules]
    lines += [f"- rule {g}" for g in update.remove_rules]
    lines += [f"+ focus {f.glob} ×{f.weight:g}" for f in update.add_focus_paths]
    lines += [f"- focus {g}" for g in update.remove_focus_paths]
    lines += [f"+ symbol {f.symbol}" for f in update.add_focus_symbols]
    lines += [f"- symbol {s}" for s in update.remove_focus_symbols]
    lines += [f"+ exclude {g}" for g in update.add_exclude]
    lines += [f"- exclude {g}" for g in update.remove_exclude]
    if update.token_budget is not None:
        lines.append(f"~ token_budget {update.token_budget}")
    if update.default_level is not None:
        lines.append(f"~ default_level L{int(update.default_level)}")
    if update.goal is not None:
        lines.append("~ goal")
    return lines


def plan_diff_lines(old: FlightPlan, new: FlightPlan) -> list[str]:
    """Readable lines for the difference between two whole plans."""
    lines: list[str] = []
    old_rules = {r.glob: r.level for r in old.rules}
    new_rules = {r.glob: r.level for r in new.rules}
    lines += [f"+ rule {g} → L{int(lv)}" for g, lv in new_rules.items() if old_rules.get(g) != lv]
    lines += [f"- rule {g}" for g in old_rules if g not in new_rules]
    old_focus = {f.glob for f in old.focus_paths}
    new_focus = {f.glob for f in new.focus_paths}
    lines += [f"+ focus {g}" for g in sorted(new_focus - old_focus)]
    lines += [f"- focus {g}" for g in sorted(old_focus - new_focus)]
    old_sym = {f.symbol for f in old.focus_symbols}
    new_sym = {f.symbol for f in new.focus_symbols}
    lines += [f"+ symbol {s}" for s in sorted(new_sym - old_sym)]
    lines += [f"- symbol {s}" for s in sorted(old_sym - new_sym)]
    lines += [f"+ exclude {g}" for g in new.exclude if g not in old.exclude]
    lines += [f"- exclude {g}" for g in old.exclude if g not in new.exclude]
    if old.token_budget != new.token_budget:
        lines.append(f"~ token_budget {old.token_budget} → {new.token_budget}")
    if old.default_level != new.default_level:
        lines.append(f"~ default_level {_lv(old.default_level)} → {_lv(new.default_level)}")
    return lines


def _lv(level: Level | None) -> str:
    return "auto" if level is None else f"L{int(level)}"


def _label(line: str) -> str:
    if line.startswith("+ rule "):
        glob, _, level = line[len("+ rule "):].rpartition(" → L")
        verb = "zoom in" if level in ("3", "4") else "zoom out" if level in ("0", "1") else "outline"
        return f"{verb} {glob} → L{level}"
    if line.startswith("+ focus "):
        return "focus " + line[len("+ focus "):].split(" ×")[0]
    return line


def short_action_label(action: str, diff_lines: list[str], limit: int = 2) -> str:
    """A compact label for activity summaries, e.g. ``zoom in src/budget/** → L4``."""
    if action == "finalize_context":
        return "finalize"
    if not diff_lines:
        return action.replace("_", " ")
    labels = [_label(line) for line in diff_lines]
    more = f" (+{len(labels) - limit})" if len(labels) > limit else ""
    return "; ".join(labels[:limit]) + more


class TurnReport(BaseModel):
    """What the current turn looks like: the answer of ``get_status``."""

    model_config = ConfigDict(extra="forbid")

    step: int
    status: str
    mode: str
    stop_reason: str | None = None
    cost_this_turn_usd: str
    cost_total_usd: str
    budget_usd: str
    map_tokens: int
    map_token_budget: int
    focus_areas: list[str]
    #: the last step's reasoning as the workflow logged it (its history trims a long one)
    reasoning: str
    proposed_diff: list[str]
    awaiting_turn: int | None = None
    #: what the awaited verdict is for: "turn" (a map turn) or "plan" (the stage plan)
    awaiting_kind: str | None = None
    decisions: int
    #: the stage plan with criteria status (markdown), when the run has one
    stage_plan: str | None = None
    #: why planning fell back to one direct stage (a planning call failed), if it did
    planning_fallback: str | None = None
    #: the model deciding the turns now (budget-aware routing may have switched it)
    model: str | None = None
    #: the routing switches so far, most recent last (``step 4 · decide: a → b · rule 1: ...``)
    model_switches: list[str] = []
    #: which workflow answers: "navigator" or "research"
    workflow: str = "navigator"
    #: subagents the run started (live: status, iteration and cost from their events)
    children: list[ChildRun] = []
    #: the last step's full decision in the worker's artifact store (``navigator status`` reads
    #: the untrimmed reasoning from it when this machine sees that store)
    reasoning_ref: ArtifactRef | None = None


class DecisionLogView(BaseModel):
    """The answer of ``get_decision_log``: every entry plus recent message notes."""

    model_config = ConfigDict(extra="forbid")

    entries: list[DecisionLogEntry]
    notes: list[MessageNote] = []
    #: subagents the run started (research runs), as the parent knows them now
    children: list[ChildRun] = []


def build_turn_report(state: NavigatorState) -> TurnReport:
    """Summarize ``state`` for queries and the Web UI."""
    meta, pending, run, log = state.map.metadata, state.steering.pending, state.run, state.log
    plan = pending.proposed_plan if pending else state.map.flight_plan
    return TurnReport(
        step=run.iteration,
        status=run.status.value,
        mode=state.steering.mode.value,
        stop_reason=run.stop_reason.value if run.stop_reason else None,
        cost_this_turn_usd=format_usd(log.last_cost_micros),
        cost_total_usd=format_usd(state.ledger.spent_micros),
        budget_usd=format_usd(state.ledger.max_micros),
        map_tokens=meta.tokens_used if meta else 0,
        map_token_budget=plan.token_budget,
        focus_areas=[f.glob for f in plan.focus_paths] + [f.symbol for f in plan.focus_symbols],
        reasoning=log.last_reasoning,
        reasoning_ref=log.last_decision_ref,
        proposed_diff=list(log.last_diff_lines),
        awaiting_turn=pending.turn if pending else None,
        awaiting_kind=pending.kind if pending else None,
        decisions=len(log.entries),
        stage_plan=_stage_markdown(state.stages),
        planning_fallback=state.stages.plan.fallback if state.stages.plan else None,
        model=state.routing.current.get("decide", state.model),
        model_switches=[switch_line(w) for w in state.routing.switches[-REPORT_SWITCHES:]],
    )


def _stage_markdown(stages: StageState) -> str | None:
    if stages.plan is None:
        return None
    checks = {c.stage_index: c for c in stages.criteria}
    return plan_markdown(stages.plan, checks, stages.index)


def steering_lines(report: TurnReport, *, plan: str, turn: str) -> list[str]:
    """The Web UI details' lines on why a run stopped, what verdict it awaits and its planning fallback
    (``plan`` / ``turn``: what the run calls its plan and a turn awaiting a verdict)."""
    md = markdown_text
    lines = [f"**Stopped:** {md(report.stop_reason)}"] if report.stop_reason else []
    if report.awaiting_turn is not None:
        what = plan if report.awaiting_kind == "plan" else f"{turn} {report.awaiting_turn}"
        lines.append(f"**Awaiting a verdict on {what}** (approve / reject / stop)")
    if report.planning_fallback:
        lines.append(f"**Planning fallback:** {md(report.planning_fallback)}")
    return lines


def turn_report_markdown(report: TurnReport, goal: str) -> str:
    """The report as markdown for ``workflow.set_current_details`` (every value escaped)."""
    md = markdown_text
    lines = [
        f"### Navigator · step {report.step} · {md(report.status)}",
        f"**Goal:** {md(shorten(goal, 200))}",
        f"**Cost:** {md(report.cost_total_usd)} of {md(report.budget_usd)} "
        f"(last turn {md(report.cost_this_turn_usd)}) · **Map:** "
        f"{report.map_tokens}/{report.map_token_budget} tokens · **Mode:** {md(report.mode)}",
    ]
    lines += steering_lines(report, plan="the stage plan", turn="turn")
    if report.model_switches:
        lines.append(f"**Model:** {code_span(report.model or '')} · **Routing switches:**")
        lines += [f"- {md(line)}" for line in report.model_switches]
    if report.focus_areas:
        lines.append("**Focus:** " + ", ".join(code_span(f) for f in report.focus_areas[:10]))
    if report.proposed_diff:
        lines.append("**Plan change:**")
        lines += [f"- {code_span(d)}" for d in report.proposed_diff[:12]]
    if report.reasoning:
        lines.append(f"**Reasoning:** {md(reasoning_preview(report.reasoning))}")
    if report.stage_plan:
        lines += ["", _dollars(report.stage_plan)]  # blank line: the reasoning may end in a list item
    return "\n".join(lines)


def reasoning_preview(reasoning: str) -> str:
    """The reasoning as the Web UI's details show it: at most ``DETAILS_REASONING_CHARS``, and a
    text history trimmed (``HISTORY_REASONING_CHARS``) ends in ``…`` so a reader knows it was cut."""
    text = shorten(reasoning, DETAILS_REASONING_CHARS)
    return text + "…" if len(reasoning) >= HISTORY_REASONING_CHARS and not text.endswith("…") else text


def code_span(text: str) -> str:
    """``text`` as an inline code span (backticks inside it are replaced, they would end it)."""
    return "`" + text.replace("`", "'") + "`"


def run_summary(goal: str, repo_path: str, model: str, verb: str = "explore") -> str:
    """The run's static summary (one line; the Web UI's *Summary* panel and the runs list)."""
    shown = display_root(repo_path)
    name = shown.rstrip("/").rsplit("/", 1)[-1] or shown
    return markdown_text(shorten(f"{verb} {name}: {' '.join(goal.split())} ({model})", 200))


def run_details_markdown(goal: str, repo_path: str, settings: dict[str, str], label: str = "Goal") -> str:
    """The run's static details: the goal (or question: ``label``) in full, the repository and the
    settings it started with."""
    head = f"**{label}:** {markdown_text(shorten(goal, 2000))}\n\n**Repository:** {code_span(display_root(repo_path))}"
    items = [f"- **{markdown_text(key)}:** {markdown_text(value)}" for key, value in settings.items()]
    return head + ("\n\n" + "\n".join(items) if items else "")
