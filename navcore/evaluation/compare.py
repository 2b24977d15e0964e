"""``navigator eval compare A B``: two eval reports side by side (a release, a model, a profile).

Per method and budget that both reports hold: the means of each, B - A, and on the tasks both ran
(matched by commit) how often B's gold-line recall beat, tied or lost to A's.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from durable_navigator.navcore.evaluation.models import EvalReport, MethodScore

__all__ = ["CompareRow", "compare_reports", "compare_markdown"]

_TIE = 1e-9


class CompareRow(BaseModel):
    """One method at one budget in both reports."""

    model_config = ConfigDict(extra="forbid")

    method: str
    tokens_budget: int
    recall_a: float
    recall_b: float
    file_hit_a: float
    file_hit_b: float
    cost_a: float
    cost_b: float
    #: tasks (by commit) both reports scored with this method and budget
    shared_tasks: int
    b_wins: int
    ties: int
    b_losses: int


def _by_commit(report: EvalReport, method: str, budget: int) -> dict[str, MethodScore]:
    return {r.task.commit: s for r in report.tasks for s in r.scores
            if s.method == method and s.tokens_budget == budget}


def compare_reports(a: EvalReport, b: EvalReport) -> list[CompareRow]:
    """Rows for every (method, budget) both reports hold, in A's order."""
    b_totals = {(t.method, t.tokens_budget): t for t in b.totals}
    rows = []
    for ta in a.totals:
        tb = b_totals.get((ta.method, ta.tokens_budget))
        if tb is None:
            continue
        sa, sb = _by_commit(a, ta.method, ta.tokens_budget), _by_commit(b, ta.method, ta.tokens_budget)
        diffs = [sb[c].line_recall - sa[c].line_recall for c in sa if c in sb]
        wins, losses = sum(d > _TIE for d in diffs), sum(d < -_TIE for d in diffs)
        rows.append(CompareRow(method=ta.method, tokens_budget=ta.tokens_budget, recall_a=ta.line_recall,
                               recall_b=tb.line_recall, file_hit_a=ta.file_hit, file_hit_b=tb.file_hit,
                               cost_a=ta.cost_usd, cost_b=tb.cost_usd, shared_tasks=len(diffs), b_wins=wins,
                               ties=len(diffs) - wins - losses, b_losses=losses))
    return rows


def compare_markdown(a: EvalReport, b: EvalReport, name_a: str, name_b: str) -> str:
    """The comparison as a Markdown table (B against A)."""
    rows = compare_reports(a, b)
    lines = [f"# eval compare — A: {name_a} · B: {name_b}", "",
             f"A: {a.repo} at {a.head[:12]}, models {', '.join(a.models)}, {len(a.tasks)} tasks",
             f"B: {b.repo} at {b.head[:12]}, models {', '.join(b.models)}, {len(b.tasks)} tasks", "",
             "| method | tokens | recall A | recall B | B − A | file hit A | file hit B | B W / T / L on shared tasks "
             "| cost A | cost B |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r.method} | {r.tokens_budget:,} | {r.recall_a:.3f} | {r.recall_b:.3f} | "
                     f"{r.recall_b - r.recall_a:+.3f} | {r.file_hit_a:.3f} | {r.file_hit_b:.3f} | "
                     f"{r.b_wins} / {r.ties} / {r.b_losses} of {r.shared_tasks} | {r.cost_a:.4f} | {r.cost_b:.4f} |")
    if not rows:
        lines.append("| (no method and budget in common) | | | | | | | | | |")
    return "\n".join(lines) + "\n"
