"""``eval.html``: the eval report with its plots as inline SVG (no script, no network, no plotting dependency).

Plots: gold-line recall by budget per method; win / tie / loss against chunk BM25; mean seconds per
exploration; cost per task; recall per task at the first budget. Every bar carries its value as a
``<title>`` (hover) and the axis labels are text, so the file reads in any browser offline.
"""

from __future__ import annotations

from html import escape

from durable_navigator.navcore.evaluation.models import EvalReport
from durable_navigator.navcore.evaluation.summary import CHUNK_BM25, report_markdown

__all__ = ["bar_chart", "report_html", "PALETTE"]

#: one colour per series, in order (colour-blind-safe Okabe-Ito)
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
_W, _H, _PAD_L, _PAD_B, _PAD_T = 720, 260, 56, 56, 28


def bar_chart(title: str, groups: list[str], series: dict[str, list[float]], fmt: str = "{:.3f}",
              y_max: float | None = None) -> str:
    """A grouped bar chart: one cluster per group, one bar per series (values in group order)."""
    top = y_max if y_max is not None else max([v for vs in series.values() for v in vs] + [0.0])
    if top <= 0:  # nothing above zero (a free model's cost): a unit axis, not a degenerate one
        top = 1.0
    if fmt == "{:.0f}":  # counts: whole numbers on every grid line
        top = float(-(-int(top) // 4) * 4)
    plot_w, plot_h = _W - _PAD_L - 16, _H - _PAD_B - _PAD_T
    n = max(len(series), 1)
    slot = plot_w / max(len(groups), 1)
    bar = max(min(slot * 0.8 / n, 48.0), 1.0)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H + 18 * n}" role="img" '
             f'aria-label="{escape(title)}">', f'<text x="{_PAD_L}" y="18" font-weight="bold">{escape(title)}</text>']
    for k in range(5):  # y grid
        y = _PAD_T + plot_h * (1 - k / 4)
        parts.append(f'<line x1="{_PAD_L}" x2="{_W - 16}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>'
                     f'<text x="{_PAD_L - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11">'
                     f'{escape(fmt.format(top * k / 4))}</text>')
    for gi, group in enumerate(groups):
        x0 = _PAD_L + gi * slot + (slot - bar * n) / 2
        for si, (name, values) in enumerate(series.items()):
            v = values[gi] if gi < len(values) else 0.0
            h = plot_h * max(min(v / top, 1.0), 0.0)
            x, y = x0 + si * bar, _PAD_T + plot_h - h
            parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar * 0.92:.1f}" height="{h:.1f}" '
                         f'fill="{PALETTE[si % len(PALETTE)]}"><title>{escape(f"{name} · {group}: {fmt.format(v)}")}'
                         '</title></rect>')
        label = group if len(group) <= 26 else group[:25] + "…"
        parts.append(f'<text x="{_PAD_L + (gi + 0.5) * slot:.1f}" y="{_PAD_T + plot_h + 16}" text-anchor="middle" '
                     f'font-size="11">{escape(label)}</text>')
    for si, name in enumerate(series):  # legend
        y = _H + 18 * si - 8
        parts.append(f'<rect x="{_PAD_L}" y="{y - 10}" width="12" height="12" fill="{PALETTE[si % len(PALETTE)]}"/>'
                     f'<text x="{_PAD_L + 18}" y="{y}" font-size="12">{escape(name)}</text>')
    return "\n".join(parts + ["</svg>"])


def _method_series(report: EvalReport, field: str) -> dict[str, list[float]]:
    methods = list(dict.fromkeys(t.method for t in report.totals))
    return {m: [float(getattr(t, field)) for b in report.budgets for t in report.totals
                if t.method == m and t.tokens_budget == b] for m in methods}


def _charts(report: EvalReport) -> list[str]:
    budgets = [f"{b:,} tokens" for b in report.budgets]
    charts = [bar_chart("Gold-line recall by token budget", budgets, _method_series(report, "line_recall"),
                        y_max=1.0),
              bar_chart("Gold-file hit by token budget", budgets, _method_series(report, "file_hit"), y_max=1.0)]
    rivals = [t for t in report.totals if t.method != CHUNK_BM25 and t.wins is not None]
    charts.append(bar_chart("Win / tie / loss against chunk BM25 (tasks)",
                            [f"{t.method} @ {t.tokens_budget:,}" for t in rivals],
                            {"win": [float(t.wins or 0) for t in rivals], "tie": [float(t.ties or 0) for t in rivals],
                             "loss": [float(t.losses or 0) for t in rivals]}, fmt="{:.0f}"))
    charts.append(bar_chart("Mean seconds per task (latency)", budgets, _method_series(report, "mean_seconds"),
                            fmt="{:.2f}"))
    n = max(len(report.tasks), 1)
    cost = {m: [v / n for v in vs] for m, vs in _method_series(report, "cost_usd").items() if m.startswith("navigator")}
    charts.append(bar_chart("Cost per task (USD)", budgets, cost, fmt="{:.4f}"))
    if report.budgets:
        first = report.budgets[0]
        methods = list(dict.fromkeys(t.method for t in report.totals))
        per_task = {m: [next((s.line_recall for s in r.scores if s.method == m and s.tokens_budget == first), 0.0)
                        for r in report.tasks] for m in methods}
        charts.append(bar_chart(f"Gold-line recall per task at {first:,} tokens", [r.task.id.rsplit("-", 1)[-1][:7]
                                                                                  for r in report.tasks],
                                per_task, y_max=1.0))
    return charts


def report_html(report: EvalReport) -> str:
    """The whole page: the plots, then the Markdown report as preformatted text (every value escaped)."""
    body = "\n".join(f"<figure>{chart}</figure>" for chart in _charts(report))
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>navigator eval — {escape(report.repo)}</title>"
            "<style>body{font-family:system-ui,sans-serif;margin:2em;max-width:60em}figure{margin:1.5em 0}"
            "pre{white-space:pre-wrap;background:#f6f6f6;padding:1em}</style></head><body>"
            f"<h1>navigator eval — {escape(report.repo)}</h1>\n{body}\n"
            f"<h2>Report</h2><pre>{escape(report_markdown(report))}</pre></body></html>\n")
