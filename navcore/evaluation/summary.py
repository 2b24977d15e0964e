"""The evaluation's totals and its Markdown report (pure: the figures come from ``eval.json``'s records).

Every task counts in every mean: a run that failed scores 0 (a failure, never a skip). Win / tie /
loss compare a method's gold-line recall with chunk BM25's on the same task at the same budget
(a tie: equal to 1e-9).
"""

from __future__ import annotations

from durable_navigator.navcore.evaluation.models import EvalReport, MethodScore, MethodTotals, TaskResult

__all__ = ["ENGINE", "CHUNK_BM25", "navigator_method", "totals", "report_markdown", "WORST_SHOWN"]

ENGINE = "engine"
CHUNK_BM25 = "chunk-bm25"
#: how many of the worst tasks the report lists per budget
WORST_SHOWN = 5
_TIE = 1e-9


def navigator_method(model: str) -> str:
    """The method name of the navigator with ``model`` (``navigator:offline``)."""
    return f"navigator:{model}"


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _score(result: TaskResult, method: str, budget: int) -> MethodScore | None:
    return next((s for s in result.scores if s.method == method and s.tokens_budget == budget), None)


def totals(results: list[TaskResult], methods: list[str], budgets: list[int]) -> list[MethodTotals]:
    """Per method and budget: means over every task, failures as zeros; W/T/L against chunk BM25."""
    out: list[MethodTotals] = []
    for budget in budgets:
        for method in methods:
            pairs = [(s, _score(r, CHUNK_BM25, budget)) for r in results if (s := _score(r, method, budget))]
            scores = [s for s, _ in pairs]
            row = MethodTotals(
                method=method, tokens_budget=budget, tasks=len(scores),
                failed=sum(1 for s in scores if s.status != "completed"),
                line_recall=_mean([s.line_recall for s in scores]), file_hit=_mean([s.file_hit for s in scores]),
                mean_tokens=_mean([float(s.tokens) for s in scores]),
                mean_seconds=_mean([s.seconds for s in scores]), cost_usd=sum(s.cost_usd for s in scores),
            )
            if method != CHUNK_BM25:
                diffs = [s.line_recall - b.line_recall for s, b in pairs if b is not None]
                row.wins = sum(1 for d in diffs if d > _TIE)
                row.losses = sum(1 for d in diffs if d < -_TIE)
                row.ties = len(diffs) - row.wins - row.losses
            out.append(row)
    return out


def _cell(text: str) -> str:
    return " ".join(text.replace("|", "\\|").split())


def _headline(report: EvalReport, budget: int) -> list[str]:
    lines = [f"### {budget:,} tokens", "",
             "| method | gold-line recall | gold-file hit | W / T / L vs chunk BM25 | failed | mean tokens "
             "| mean s | cost USD |", "|---|---|---|---|---|---|---|---|"]
    for t in report.totals:
        if t.tokens_budget != budget:
            continue
        wtl = "—" if t.wins is None else f"{t.wins} / {t.ties} / {t.losses}"
        lines.append(f"| {t.method} | {t.line_recall:.3f} | {t.file_hit:.3f} | {wtl} | {t.failed} | "
                     f"{t.mean_tokens:,.0f} | {t.mean_seconds:.2f} | {t.cost_usd:.4f} |")
    return lines


def _worst(report: EvalReport, method: str, budget: int) -> list[str]:
    rows = [(s, r) for r in report.tasks if (s := _score(r, method, budget))]
    rows.sort(key=lambda sr: (sr[0].line_recall, sr[1].task.id))
    lines = [f"Worst tasks of {method} at {budget:,} tokens:", "",
             "| task | recall | chunk BM25 | what was missed | goal |", "|---|---|---|---|---|"]
    for s, r in rows[:WORST_SHOWN]:
        base = _score(r, CHUNK_BM25, budget)
        missed = f"{s.missed_lines} of {s.gold_lines} gold lines"
        if s.missed_files:
            missed += "; files not shown: " + ", ".join(s.missed_files)
        if s.status != "completed":
            missed = f"run {s.status}: {s.error or s.stop_reason or 'no context'}"
        lines.append(f"| {r.task.id} | {s.line_recall:.2f} | {base.line_recall if base else 0:.2f} | "
                     f"{_cell(missed)[:160]} | {_cell(r.task.goal)[:120]} |")
    return lines


def _tasks_line(report: EvalReport) -> str:
    if report.cases:
        n = len(report.tasks)
        return (f"- **tasks**: {n} quality case{'' if n == 1 else 's'} exported by `navigator export` (commits of "
                f"`{report.commit_range}`): goal = the exported run's goal, gold = every line of the files its "
                "case.json marks right (its gold_source says whether a user named them or the run's pack showed "
                "them in full); each explored at the commit the run saw")
    return (f"- **tasks**: {len(report.tasks)} commits of `{report.commit_range}` (of {report.candidates} that pass "
            "the task rules of bench/QUALITY.md: goal = the commit message with the changed paths removed, gold = "
            "the changed lines in the parent revision); each explored at its parent commit")


def report_markdown(report: EvalReport) -> str:
    """``eval.md``: what was run, the headline table per budget, the worst tasks with what was missed."""
    navs = [navigator_method(m) for m in report.models]
    lines = [
        f"# navigator eval — {report.repo}", "",
        _tasks_line(report),
        f"- **models**: {', '.join(report.models)}; **prices** (USD per million input / output tokens): "
        + "; ".join(f"{m}: {p}" for m, p in report.prices.items()),
        f"- **token budgets**: {', '.join(f'{b:,}' for b in report.budgets)}; **USD cap** (whole eval): "
        f"{report.budget_usd}, spent {report.spent_usd:.4f}",
        f"- **machine**: {report.machine}; started {report.started}; this command waited "
        f"{report.wall_seconds:.0f} s; "
        f"batch `{report.batch_id}`",
        "- **methods**: the navigator (each model, through Temporal, default flags); the engine alone (the repo "
        "map for the goal, no model); chunk BM25 (function-level chunks in BM25 order while they fit)",
        "- Seconds: an exploration's child workflow from start to close (time waiting for a worker "
        "included), the engine's and BM25's in this process. These tasks tune nothing: no weight, threshold or prompt the package ships was fitted to them. "
        "A failed run scores 0 and is counted, never skipped.",
        "",
    ]
    for budget in report.budgets:
        lines += _headline(report, budget) + [""]
        for method in navs:
            lines += _worst(report, method, budget) + [""]
    return "\n".join(lines).rstrip() + "\n"
