"""Tables of the quality benchmark: per split, budget, method; per repository; paired; targets; failures.

Every figure is computed from a run's ``records.jsonl``; nothing is typed in.
Means are over all tasks of the split (a failed call with no context scores 0
and is listed under *Failures*); ``line_recall_text`` is averaged over the tasks
that have at least one gold line the old text rule can score.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import numpy as np

__all__ = ["write_results", "aggregate", "paired", "summarize", "latest"]

METHODS = ("navigator", "engine", "bm25-file", "bm25-chunk")
BASELINES = ("bm25-file", "bm25-chunk")
_METRICS = ("line_recall", "file_hit", "file_hit_listed", "all_files", "file_recall")
_EPS = 1e-9
#: 1-minute load average up to which a call counts as made on a quiet machine (2 cores here)
QUIET_LOAD = 2.0


def latest(records: list[dict]) -> dict[tuple[str, int], dict]:
    """The last record of every task x budget (a re-run after an environment failure supersedes)."""
    return {(r["task"], r["budget"]): r for r in records}


def _pct(values: list[float], q: float) -> float | None:
    return round(float(np.percentile(values, q)), 3) if values else None


def aggregate(recs: list[dict], method: str) -> dict:
    """Means, shares and timing of one method over ``recs``."""
    rows = [r[method] for r in recs]
    n = len(rows)
    out: dict = {"n": n}
    for k in _METRICS:
        out[k] = round(sum(x[k] for x in rows) / n, 4) if n else None
    text = [x["line_recall_text"] for x in rows if x.get("line_recall_text") is not None]
    out["line_recall_text"] = round(sum(text) / len(text), 4) if text else None
    out["over_budget"] = round(sum(bool(x["over_budget"]) for x in rows) / n, 4) if n else None
    out["tokens_mean"] = round(sum(x["tokens"] for x in rows) / n, 1) if n else None
    secs = [x["seconds"] for x in rows]
    out["seconds_median"], out["seconds_p90"] = _pct(secs, 50), _pct(secs, 90)
    # the machine is shared: the same figures over calls made while the 1-minute load was <= QUIET_LOAD
    quiet = [x["seconds"] for x in rows if x.get("load1") is not None and x["load1"] <= QUIET_LOAD]
    out["n_quiet"], out["seconds_median_quiet"], out["seconds_p90_quiet"] = len(quiet), _pct(quiet, 50), _pct(quiet, 90)
    out["failed"] = sum(1 for x in rows if x["exit"] != 0)
    out["no_context"] = sum(1 for x in rows if not x["has_context"])
    return out


def paired(recs: list[dict], a: str, b: str, metric: str) -> list[int]:
    """Per task win/tie/loss of ``a`` against ``b`` on ``metric``."""
    w = sum(1 for r in recs if r[a][metric] > r[b][metric] + _EPS)
    lo = sum(1 for r in recs if r[a][metric] < r[b][metric] - _EPS)
    return [w, len(recs) - w - lo, lo]


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a is not None and b else None


def summarize(recs: list[dict], budgets: list[int]) -> dict:
    """Overall, per repository, paired and navigator-run statistics per budget."""
    out: dict = {"overall": {}, "per_repo": {}, "paired": {}, "navigator_runs": {}}
    repos = sorted({r["repo"] for r in recs})
    for b in budgets:
        rb = [r for r in recs if r["budget"] == b]
        if not rb:
            continue
        key = str(b)
        out["overall"][key] = {m: aggregate(rb, m) for m in METHODS}
        o = out["overall"][key]
        out["paired"][key] = {
            base: {"line_recall": paired(rb, "navigator", base, "line_recall"),
                   "file_hit": paired(rb, "navigator", base, "file_hit"),
                   "ratio_line_recall": _ratio(o["navigator"]["line_recall"], o[base]["line_recall"]),
                   "ratio_file_hit": _ratio(o["navigator"]["file_hit"], o[base]["file_hit"])}
            for base in BASELINES
        }
        out["paired"][key]["engine-vs-bm25-file"] = {
            "line_recall": paired(rb, "engine", "bm25-file", "line_recall"),
            "ratio_line_recall": _ratio(o["engine"]["line_recall"], o["bm25-file"]["line_recall"])}
        nav = [r["navigator"] for r in rb]
        out["navigator_runs"][key] = {
            "stop_reasons": dict(Counter(str(x.get("stop_reason")) for x in nav).most_common()),
            "plans": dict(Counter(str(x.get("plan")) for x in nav).most_common()),
            "workers": dict(Counter(str(x.get("worker")) for x in nav).most_common()),
            "iterations_mean": round(float(np.mean([x.get("iterations") or 0 for x in nav])), 2),
            "exit_codes": dict(Counter(str(x["exit"]) for x in nav).most_common()),
            "engine_exit_codes": dict(Counter(str(r["engine"]["exit"]) for r in rb).most_common()),
        }
        for repo in repos:
            rr = [r for r in rb if r["repo"] == repo]
            if rr:
                out["per_repo"].setdefault(repo, {})[key] = {m: aggregate(rr, m) for m in METHODS}
    return out


def _targets(s: dict, recs: list[dict]) -> list[tuple[str, str, bool | None]]:
    """The issue's targets evaluated on this split: (target, measured, met)."""
    o, rows = s["overall"], []

    def get(b: int, m: str, k: str) -> float | None:
        return o.get(str(b), {}).get(m, {}).get(k)

    nav8, f8, c8 = get(8192, "navigator", "line_recall"), get(8192, "bm25-file", "line_recall"), \
        get(8192, "bm25-chunk", "line_recall")
    if None not in (nav8, f8, c8):
        rows.append(("gold-line recall at 8k >= 1.5x whole-file BM25 and above chunk BM25",
                     f"{nav8:.3f} vs {f8:.3f} (x{nav8 / f8:.2f}) and {c8:.3f}" if f8 else f"{nav8:.3f}",
                     nav8 >= 1.5 * f8 and nav8 > c8))
    if (v := get(32768, "navigator", "line_recall")) is not None:
        rows.append(("gold-line recall at 32k >= 0.90", f"{v:.3f}", v >= 0.90))
    if (v := get(8192, "navigator", "file_hit")) is not None:
        rows.append(("gold-file hit at 8k >= 0.85", f"{v:.3f}", v >= 0.85))
    below = [f"{repo} @{b}" for repo, per in s["per_repo"].items() for b, m in per.items()
             if m["navigator"]["file_hit"] < m["bm25-file"]["file_hit"] - _EPS]
    rows.append(("gold-file hit never below whole-file BM25 on any repository at any budget",
                 f"{len(below)} repo x budget cells below" + (f": {', '.join(below)}" if below else ""), not below))
    e32, f32 = get(32768, "engine", "line_recall"), get(32768, "bm25-file", "line_recall")
    if None not in (e32, f32):
        rows.append(("engine alone above whole-file BM25 at 32k (gold-line recall)", f"{e32:.3f} vs {f32:.3f}",
                     e32 > f32))
    med, p90 = get(8192, "navigator", "seconds_median"), get(8192, "navigator", "seconds_p90")
    if med is not None:
        qm, qp, qn = (get(8192, "navigator", k) for k in ("seconds_median_quiet", "seconds_p90_quiet", "n_quiet"))
        quiet = f"; calls at load <= {QUIET_LOAD:g}: median {_f(qm, 2)} s, p90 {_f(qp, 2)} s (n={qn})"
        rows.append(("median <= 3 s and p90 <= 6 s per exploration at 8k (warm worker)",
                     f"median {med:.2f} s, p90 {p90:.2f} s{quiet}", med <= 3 and p90 <= 6))
    over = sum(1 for r in recs if r["navigator"]["over_budget"])
    rows.append(("no navigator map over its budget (any budget)", f"{over} of {len(recs)} over", over == 0))
    return rows


def _f(v: float | None, nd: int = 3) -> str:
    return "—" if v is None else f"{v:.{nd}f}"


def _wtl(x: list[int]) -> str:
    return "/".join(map(str, x))


def markdown(split: str, meta: dict, s: dict, recs: list[dict], tasks_by_repo: dict[str, tuple[str, int]],
             superseded: list[dict] | None = None) -> str:
    """The ``quality-<split>.md`` report."""
    prov = meta["provenance"]
    budgets = sorted(int(b) for b in s["overall"])
    lines = [
        f"# Context quality — {split.upper()} split"
        + (" — checkouts with their history (`.git` up to the parent commit)" if meta.get("with_git") else
           " — checkouts without history (no `.git`)"),
        "",
        f"{'Report-only split: never tune on these figures.' if split == 'test' else 'Tuning split.'} "
        f"Generated by `bench/quality.py` (`bench/QUALITY.md` has the rules).",
        "",
        f"- command: `{prov['command']}`",
        f"- date: {prov['date_utc']}; commit {prov['commit'][:10]} ({prov['commit_subject']})"
        + (" + uncommitted changes" if prov["dirty"] else ""),
        f"- machine: {prov['machine']['cpus']} CPUs, Python {prov['machine']['python']}, nice {prov['machine']['nice']};"
        f" load average (1/5/15 min) at start {', '.join(f'{x:.2f}' for x in meta['load_start'])}, at end "
        + (", ".join(f"{x:.2f}" for x in meta["load_end"]) if meta.get("load_end") else "?")
        + f"; run wall time {meta.get('wall_seconds', 0) / 60:.1f} min for {meta['n_tasks']} tasks of splits "
        f"{'+'.join(meta['splits'])} x budgets {meta['budgets']}",
        f"- {len({r['task'] for r in recs})} tasks of this split from {len(tasks_by_repo)} repositories: "
        + ", ".join(f"{repo} ({lang}, {n})" for repo, (lang, n) in sorted(tasks_by_repo.items())),
        "",
        "## Headline",
        "",
        "| budget | method | gold-line recall | gold-file hit | all gold files | file listed (any level) "
        "| line recall (old text rule) | over budget | tokens (mean) | median s | p90 s | failed calls |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for b in budgets:
        for m in METHODS:
            a = s["overall"][str(b)][m]
            lines.append(f"| {b} | {m} | {_f(a['line_recall'])} | {_f(a['file_hit'])} | {_f(a['all_files'])} | "
                         f"{_f(a['file_hit_listed'])} | {_f(a['line_recall_text'])} | {_f(a['over_budget'])} | "
                         f"{a['tokens_mean']:.0f} | {_f(a['seconds_median'], 2)} | {_f(a['seconds_p90'], 2)} | "
                         f"{a['failed']} |")
    lines += ["", "## Navigator vs baselines, paired per task (win/tie/loss) and ratio of means", "",
              "| budget | navigator vs | gold-line recall W/T/L | ratio | gold-file hit W/T/L | ratio |",
              "|---|---|---|---|---|---|"]
    for b in budgets:
        for base in BASELINES:
            p = s["paired"][str(b)][base]
            lines.append(f"| {b} | {base} | {_wtl(p['line_recall'])} | {_f(p['ratio_line_recall'], 2)} | "
                         f"{_wtl(p['file_hit'])} | {_f(p['ratio_file_hit'], 2)} |")
        p = s["paired"][str(b)]["engine-vs-bm25-file"]
        lines.append(f"| {b} | (engine vs bm25-file) | {_wtl(p['line_recall'])} | {_f(p['ratio_line_recall'], 2)} | | |")
    lines += ["", f"## Targets of issue 11, evaluated on this split ({split})", "",
              "| target | measured | met |", "|---|---|---|"]
    for name, measured, met in _targets(s, recs):
        lines.append(f"| {name} | {measured} | {'met' if met else '**MISSED**'} |")
    for title, key in (("gold-line recall", "line_recall"), ("gold-file hit", "file_hit")):
        lines += ["", f"## Per repository: {title} (navigator / engine / bm25-file / bm25-chunk)", "",
                  "| repository | lang | tasks | " + " | ".join(str(b) for b in budgets) + " |",
                  "|---|---|---|" + "---|" * len(budgets)]
        for repo, per in sorted(s["per_repo"].items()):
            lang, n = tasks_by_repo.get(repo, ("?", 0))
            cells = []
            for b in budgets:
                a = per.get(str(b))
                if not a:
                    cells.append("—")
                    continue
                nav, fb = a["navigator"][key], a["bm25-file"][key]
                mark = "**" if nav < fb - _EPS else ""
                cells.append(f"{mark}{nav:.2f}{mark} / {a['engine'][key]:.2f} / {fb:.2f} / {a['bm25-chunk'][key]:.2f}")
            lines.append(f"| {repo} | {lang} | {n} | " + " | ".join(cells) + " |")
        lines.append("")
        lines.append("Bold: the navigator below whole-file BM25 in that cell.")
    lines += _worst(s, budgets)
    lines += ["", f"Seconds are wall times on a shared machine (see the load above; every record has the 1-minute "
              f"load at its end). Over calls made at load <= {QUIET_LOAD:g} only, navigator / engine median and p90:", ""]
    for b in budgets:
        n_, e_ = s["overall"][str(b)]["navigator"], s["overall"][str(b)]["engine"]
        lines.append(f"- {b}: navigator {_f(n_['seconds_median_quiet'], 2)} / {_f(n_['seconds_p90_quiet'], 2)} s "
                     f"(n={n_['n_quiet']}), engine {_f(e_['seconds_median_quiet'], 2)} / "
                     f"{_f(e_['seconds_p90_quiet'], 2)} s (n={e_['n_quiet']})")
    lines += ["", "## Per repository: navigator seconds (median / p90) and failed calls", "",
              "| repository | " + " | ".join(str(b) for b in budgets) + " |", "|---|" + "---|" * len(budgets)]
    for repo, per in sorted(s["per_repo"].items()):
        cells = [f"{_f(per[str(b)]['navigator']['seconds_median'], 2)} / {_f(per[str(b)]['navigator']['seconds_p90'], 2)}"
                 + (f" ({per[str(b)]['navigator']['failed']} failed)" if per[str(b)]['navigator']['failed'] else "")
                 if str(b) in per else "—" for b in budgets]
        lines.append(f"| {repo} | " + " | ".join(cells) + " |")
    lines += ["", "## Navigator runs", "", "| budget | exit codes | stop reasons | plan | worker | mean iterations |"
              " repo-map generate exit codes |", "|---|---|---|---|---|---|---|"]
    for b in budgets:
        n = s["navigator_runs"][str(b)]
        fmt = lambda d: ", ".join(f"{k}: {v}" for k, v in d.items())  # noqa: E731
        lines.append(f"| {b} | {fmt(n['exit_codes'])} | {fmt(n['stop_reasons'])} | {fmt(n['plans'])} | "
                     f"{fmt(n['workers'])} | {n['iterations_mean']} | {fmt(n['engine_exit_codes'])} |")
    rss = [r["worker_rss_mb"] for r in recs if r.get("worker_rss_mb")]
    if rss:
        lines.append(f"\nWorker resident memory over this split: first {rss[0]:.0f} MB, max {max(rss):.0f} MB, "
                     f"last {rss[-1]:.0f} MB.")
    unparsed = sum(r[m]["unparsed"] for r in recs for m in METHODS)
    lines.append(f"Context lines the scorer could not place (should be 0): {unparsed}.")
    lines += _failures(recs, meta, superseded or [])
    return "\n".join(lines) + "\n"


def _worst(s: dict, budgets: list[int]) -> list[str]:
    """Repository x budget cells where the navigator trails a baseline, largest gap first."""
    gaps = []
    for repo, per in s["per_repo"].items():
        for b in budgets:
            a = per.get(str(b))
            if not a:
                continue
            for base in BASELINES:
                d = a["navigator"]["line_recall"] - a[base]["line_recall"]
                if d < -_EPS:
                    gaps.append((d, repo, b, base, a["navigator"]["line_recall"], a[base]["line_recall"]))
    out = ["", "## Worst cells: navigator gold-line recall below a baseline (largest gap first)", ""]
    if not gaps:
        return out + ["None."]
    out += ["| repository | budget | baseline | navigator | baseline | gap |", "|---|---|---|---|---|---|"]
    for d, repo, b, base, nav, val in sorted(gaps)[:15]:
        out.append(f"| {repo} | {b} | {base} | {nav:.2f} | {val:.2f} | {d:+.2f} |")
    if len(gaps) > 15:
        out.append(f"\n({len(gaps) - 15} more cells below a baseline; see the JSON.)")
    return out


def _failures(recs: list[dict], meta: dict, superseded: list[dict]) -> list[str]:
    out = ["", "## Failures (every non-zero exit, timeout or missing context; never retried)", ""]
    rows = []
    for r in recs:
        for m in ("navigator", "engine"):
            x = r[m]
            if x["exit"] != 0 or not x["has_context"] or x.get("error"):
                tail = (x.get("stderr_tail") or "").strip().splitlines()
                first_fatal = next((ln for ln in tail if "Fatal" in ln or "Error" in ln or "error" in ln),
                                   tail[-1] if tail else "")
                rows.append(f"| {r['task']} | {r['budget']} | {m} | {x['exit']} | "
                            f"{'yes' if x['has_context'] else 'no'} | {x.get('error', '')} "
                            f"{first_fatal[:160].replace('|', '/')} |")
    if not rows:
        out.append("None.")
    else:
        out += ["| task | budget | method | exit | context scored | error |", "|---|---|---|---|---|---|", *rows]
    if superseded:
        latest_by_pair = {(r["task"], r["budget"]): r for r in recs}
        out += ["", "Superseded records (re-run; the figures above use the re-run, listed with why):", "",
                "| task | budget | first navigator exit | first stderr (last line) | why re-run |",
                "|---|---|---|---|---|"]
        for r in superseded:
            tail = [ln for ln in (r["navigator"].get("stderr_tail") or "").strip().splitlines() if ln.strip("╰─╯│ ")]
            why = latest_by_pair.get((r["task"], r["budget"]), {}).get("rerun_reason", "")
            out.append(f"| {r['task']} | {r['budget']} | {r['navigator']['exit']} | "
                       f"{(tail[-1] if tail else '')[:120].replace('|', '/')} | {why} |")
    for inc in meta.get("incidents", []):
        out.append(f"\nIncident: {json.dumps(inc)[:600]}")
    return out


def write_results(run_dir: Path, out_dir: Path, tasks_file: Path) -> None:
    """``quality-<split>.md`` + ``.json`` for every split present in the run."""
    meta = json.loads((run_dir / "meta.json").read_text())
    every = [json.loads(x) for x in (run_dir / "records.jsonl").read_text().splitlines() if x.strip()]
    for r in every:  # runs recorded before the plan was read from the pack: read it from the saved copy
        saved = run_dir / "contexts" / r["task"] / f"{r['budget']}-navigator-context.md"
        if r["navigator"].get("plan") is None and saved.is_file():
            if m := re.search(r"^### Plan \(([^)]*)\)", saved.read_text(encoding="utf-8"), re.M):
                r["navigator"]["plan"] = m.group(1)
    last = latest(every)
    recs = list(last.values())
    superseded = [r for r in every if last[(r["task"], r["budget"])] is not r]
    tasks = [json.loads(x) for x in tasks_file.read_text().splitlines() if x.strip()]
    out_dir.mkdir(parents=True, exist_ok=True)
    for split in meta["splits"]:
        rs = [r for r in recs if r["split"] == split]
        if not rs:
            continue
        in_run = {r["task"] for r in rs}
        by_repo: dict[str, tuple[str, int]] = {}
        for t in tasks:
            if t["id"] in in_run:
                lang, n = by_repo.get(t["repo"], (t["language"], 0))
                by_repo[t["repo"]] = (lang, n + 1)
        s = summarize(rs, sorted({r["budget"] for r in rs}))
        gone = [r for r in superseded if r["split"] == split]
        name = f"quality-{split}-git" if meta.get("with_git") else f"quality-{split}"
        (out_dir / f"{name}.md").write_text(markdown(split, meta, s, rs, by_repo, gone))
        (out_dir / f"{name}.json").write_text(json.dumps(
            {"split": split, "meta": meta, "summary": s, "records": rs, "superseded_records": gone}, indent=1) + "\n")
        print(f"wrote {out_dir / f'{name}.md'}", flush=True)
