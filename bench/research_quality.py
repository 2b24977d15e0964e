"""Research quality (issue 14): ``navigator ask`` as question answering on the context-quality task set.

For every task of the context-quality benchmark's task set (``bench/tasks/quality_tasks.jsonl``,
``bench/QUALITY.md``; read from ``--bench-dir``: this repository's ``bench/`` once the
benchmark is merged, else the benchmark's worktree, read-only), in the same run, through ONE
``navigator server`` + ONE long-running ``navigator worker`` and the installed CLI with default
flags (offline model: no API key is set):

* **ask** — ``navigator ask CHECKOUT GOAL --json``: the written ``answer.md`` (answer and
  findings) is parsed for ``path:start-end`` citations;
* **navigator (reference)** — ``navigator explore CHECKOUT GOAL --tokens 8192 --json``: its
  context pack is scored with the benchmark's own scorer (``quality_score.py``: a gold file is
  hit when the pack shows at least one of its lines).

Scores per task:

* **citation file hit** — at least one cited file is a gold file (vs the pack's gold-file hit);
* **citation line precision** — cited lines that are gold lines / cited lines (and line recall:
  gold lines cited / gold lines);
* seconds (wall time of each CLI process) and cost (USD, from the result).

Usage::

    .venv/bin/python bench/research_quality.py run --split dev --limit 3     # a smoke run
    nohup nice -n 10 .venv/bin/python bench/research_quality.py run --split all > rq.log 2>&1 &
    .venv/bin/python bench/research_quality.py report RUN_DIR               # rewrite the results

Raw records go to ``$BENCH_DATA/research-runs/<stamp>/`` (outside the repository); the tables to
``bench/results/research-quality-<split>.{md,json}``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import json
import os
import statistics
import subprocess
from collections import Counter
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from durable_navigator.navcore.run.citations import citation_spans

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
#: where the context-quality benchmark lives until it is merged here
BENCH_WORKTREE = Path("/work/wt-bench/bench")
REFERENCE_BUDGET = 8192
ASK_TIMEOUT_S = 900.0


def bench_dir(explicit: Path | None) -> Path:
    """The context-quality benchmark's folder: explicit, this repository's, or its worktree."""
    for candidate in ([explicit] if explicit else []) + [BENCH, BENCH_WORKTREE]:
        if candidate and (candidate / "quality_score.py").is_file() and (candidate / "tasks" / "quality_tasks.jsonl").is_file():
            return candidate
    raise SystemExit("the context-quality benchmark (quality_score.py, tasks/quality_tasks.jsonl) is not available; "
                     "pass --bench-dir")


def _load(folder: Path, name: str) -> ModuleType:
    """Import one module of the benchmark by path (its folder on sys.path for its own imports)."""
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------- scoring
def score_citations(answer: str, gold_lines: dict[str, list[int]]) -> dict[str, Any]:
    """Citation file hit, line precision and line recall of one answer against the task's gold."""
    cited: dict[str, set[int]] = {}
    for _, _, c in citation_spans(answer):
        cited.setdefault(c.path, set()).update(c.lines())
    gold = {p: set(lines) for p, lines in gold_lines.items()}
    cited_total = sum(len(v) for v in cited.values())
    hits = sum(len(cited.get(p, set()) & lines) for p, lines in gold.items())
    gold_total = sum(len(v) for v in gold.values())
    return {
        "citations": sum(1 for _ in citation_spans(answer)),
        "cited_files": len(cited),
        "citation_file_hit": float(any(p in gold for p in cited)),
        "citation_file_recall": sum(1 for p in gold if p in cited) / len(gold) if gold else 0.0,
        "citation_line_precision": hits / cited_total if cited_total else 0.0,
        "citation_line_recall": hits / gold_total if gold_total else 0.0,
        "cited_lines": cited_total,
    }


# ---------------------------------------------------------------- one task
def _ask(stack: Any, run_fn: Any, root: Path, goal: str) -> Any:
    argv = [str(Path(sys.executable).parent / "navigator"), "ask", "--json", "--", str(root), goal]
    return run_fn(argv, stack.env(), stack.state, ASK_TIMEOUT_S)


def run_task(stack: Any, mods: dict[str, ModuleType], task: Any, keep: Path) -> dict[str, Any]:
    """ask and the navigator's 8k pack for one task, scored."""
    taskset, score, runner = mods["taskset"], mods["quality_score"], mods["quality_run"]
    taskset.materialize([task])
    root = taskset.repo_dir(task)
    stack.check(task.id)
    index = stack.index(root)
    source = score.read_source(root)
    rec: dict[str, Any] = {"task": task.id, "repo": task.repo, "split": task.split, "language": task.language,
                           "gold_files": len(task.gold_lines), "index_seconds": index.seconds}
    # the reference: the navigator's context pack at 8k, scored by the benchmark's own rule
    nav = stack.explore(root, task.goal, REFERENCE_BUDGET)
    ref: dict[str, Any] = {"exit": nav.exit_code, "seconds": nav.seconds}
    try:
        result = json.loads(nav.stdout)
        context = Path(result["context_path"]).read_text(encoding="utf-8")
        ref.update(score.score_context(score.parse_context(score.map_section(context), source), task.gold_lines, source))
        ref["cost_usd"] = float(result.get("cost_usd") or 0)
    except (json.JSONDecodeError, KeyError, TypeError, OSError) as exc:
        ref.update(error=f"{type(exc).__name__}: {exc}"[:300], file_hit=0.0, line_recall=0.0)
    rec["navigator"] = ref
    # the research workflow
    call = _ask(stack, runner._run, root, task.goal)
    ask: dict[str, Any] = {"exit": call.exit_code, "seconds": call.seconds, "load1": call.load1}
    try:
        result = json.loads(call.stdout)
        answer_path = Path(result["answer_path"])
        answer = answer_path.read_text(encoding="utf-8")
        ask.update(score_citations(answer, task.gold_lines))
        ask.update(cost_usd=float(result.get("cost_usd") or 0), completed_normally=result.get("completed_normally"),
                   stop_reason=result.get("stop_reason"), stop_detail=result.get("stop_detail"), rounds=result.get("rounds"), steps=result.get("steps"),
                   iterations=result.get("iterations"), findings=result.get("findings"),
                   citations_fixed=result.get("citations_fixed"), workflow_id=result.get("workflow_id"))
        keep.mkdir(parents=True, exist_ok=True)
        (keep / "answer.md").write_text(answer, encoding="utf-8")
    except (json.JSONDecodeError, KeyError, TypeError, OSError) as exc:
        ask.update(error=f"{type(exc).__name__}: {exc}"[:300], stderr_tail=call.stderr[-1500:], citation_file_hit=0.0,
                   citation_line_precision=0.0, citation_line_recall=0.0)
    rec["ask"] = ask
    return rec


# ---------------------------------------------------------------- report
def _mean(values: list[float]) -> float:
    return round(statistics.fmean(values), 4) if values else 0.0


def summarize(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Per split: hit rates, paired comparison, precision, median time and cost."""
    out: dict[str, Any] = {}
    for split in sorted({r["split"] for r in records}):
        rs = [r for r in records if r["split"] == split]
        ask_hit = [r["ask"].get("citation_file_hit", 0.0) for r in rs]
        nav_hit = [r["navigator"].get("file_hit", 0.0) for r in rs]
        wins = sum(1 for a, n in zip(ask_hit, nav_hit) if a > n)
        losses = sum(1 for a, n in zip(ask_hit, nav_hit) if a < n)
        out[split] = {
            "tasks": len(rs),
            "repositories": len({r["repo"] for r in rs}),
            "ask_citation_file_hit": _mean(ask_hit),
            "navigator_8k_file_hit": _mean(nav_hit),
            "target_met": _mean(ask_hit) >= _mean(nav_hit),
            "paired_win_tie_loss": [wins, len(rs) - wins - losses, losses],
            "ask_citation_file_recall": _mean([r["ask"].get("citation_file_recall", 0.0) for r in rs]),
            "navigator_8k_file_recall": _mean([r["navigator"].get("file_recall", 0.0) for r in rs]),
            "ask_citation_line_precision": _mean([r["ask"].get("citation_line_precision", 0.0) for r in rs]),
            "ask_citation_line_recall": _mean([r["ask"].get("citation_line_recall", 0.0) for r in rs]),
            "navigator_8k_line_recall": _mean([r["navigator"].get("line_recall", 0.0) for r in rs]),
            "ask_median_seconds": round(statistics.median([r["ask"]["seconds"] for r in rs]), 2),
            "navigator_median_seconds": round(statistics.median([r["navigator"]["seconds"] for r in rs]), 2),
            "ask_median_cost_usd": statistics.median([r["ask"].get("cost_usd", 0.0) for r in rs]),
            "ask_median_citations": statistics.median([r["ask"].get("citations", 0) for r in rs]),
            "ask_median_cited_files": statistics.median([r["ask"].get("cited_files", 0) for r in rs]),
            "ask_completed_normally": _mean([1.0 if r["ask"].get("completed_normally") else 0.0 for r in rs]),
            "ask_stop_reasons": dict(sorted(Counter(str(r["ask"].get("stop_reason")) for r in rs).items())),
            "load1_median": round(statistics.median([r["ask"].get("load1") or 0.0 for r in rs]), 2),
            "ask_failures": [r["task"] for r in rs if r["ask"].get("exit") != 0 or "error" in r["ask"]],
            "navigator_failures": [r["task"] for r in rs if r["navigator"].get("exit") != 0 or "error" in r["navigator"]],
        }
    return out


def _markdown(split: str, s: dict[str, Any], meta: dict[str, Any]) -> str:
    w, t, lo = s["paired_win_tie_loss"]
    return "\n".join([
        f"# Research quality — {split} split",
        "",
        f"{s['tasks']} tasks on {s['repositories']} repositories, offline model (no key), one server + one worker, "
        f"installed CLI with default flags. Run {meta['stamp']} at commit `{meta['commit'][:12]}`.",
        "",
        "| measure | `navigator ask` (citations) | navigator pack at 8k (reference, same run) |",
        "|---|---|---|",
        f"| gold-file hit | **{s['ask_citation_file_hit']:.3f}** | {s['navigator_8k_file_hit']:.3f} |",
        f"| gold-file recall | {s['ask_citation_file_recall']:.3f} | {s['navigator_8k_file_recall']:.3f} |",
        f"| gold-line recall | {s['ask_citation_line_recall']:.3f} | {s['navigator_8k_line_recall']:.3f} |",
        f"| citation line precision | {s['ask_citation_line_precision']:.3f} | — |",
        f"| median seconds per question | {s['ask_median_seconds']} | {s['navigator_median_seconds']} |",
        f"| median cost (USD) | {s['ask_median_cost_usd']} | — |",
        "",
        f"Paired on file hit (ask vs pack): {w} wins, {t} ties, {lo} losses. Target (ask ≥ pack): "
        f"**{'met' if s['target_met'] else 'not met'}**. Median citations {s['ask_median_citations']} over "
        f"{s['ask_median_cited_files']} files; completed normally {s['ask_completed_normally']:.2f} "
        f"(stop reasons: {', '.join(f'{k} {v}' for k, v in s.get('ask_stop_reasons', {}).items())}).",
        f"Command: `{meta.get('command', '?')}`; median 1-minute load average at the end of each ask "
        f"{s.get('load1_median', '?')} on {meta.get('cpus')} CPUs (the machine is shared: seconds are not clean).",
        f"Failures: ask {len(s['ask_failures'])}, navigator {len(s['navigator_failures'])}.",
        "",
    ])


def write_results(run_dir: Path) -> None:
    records = [json.loads(line) for line in (run_dir / "records.jsonl").read_text().splitlines() if line.strip()]
    meta = json.loads((run_dir / "meta.json").read_text())
    summary = summarize(records)
    out = BENCH / "results"
    out.mkdir(exist_ok=True)
    for split, s in summary.items():
        (out / f"research-quality-{split}.json").write_text(json.dumps({"meta": meta, "summary": s}, indent=2) + "\n")
        (out / f"research-quality-{split}.md").write_text(_markdown(split, s, meta))
        print(_markdown(split, s, meta))


# ---------------------------------------------------------------- driver
def cmd_run(args: argparse.Namespace) -> None:
    folder = bench_dir(args.bench_dir)
    mods = {name: _load(folder, name) for name in ("taskset", "quality_score", "quality_run")}
    tasks = mods["taskset"].load_tasks(folder / "tasks" / "quality_tasks.jsonl")
    if args.split != "all":
        tasks = [t for t in tasks if t.split == args.split]
    if args.limit:
        per: dict[str, int] = {}
        kept = []
        for t in tasks:
            if per.get(t.repo, 0) < args.limit:
                per[t.repo] = per.get(t.repo, 0) + 1
                kept.append(t)
        tasks = kept
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    run_dir = Path(args.run_dir) if args.run_dir else mods["taskset"].DATA_ROOT / "research-runs" / stamp
    run_dir.mkdir(parents=True, exist_ok=True)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    meta = {"stamp": stamp, "commit": commit, "bench_dir": str(folder), "tasks": len(tasks), "split": args.split,
            "limit": args.limit, "cpus": os.cpu_count(),
            "command": " ".join(["bench/research_quality.py", *sys.argv[1:]]), "reference_budget": REFERENCE_BUDGET}
    (run_dir / "meta.json").write_text(json.dumps(meta, indent=2))
    done = set()
    records_path = run_dir / "records.jsonl"
    if records_path.is_file():
        done = {json.loads(line)["task"] for line in records_path.read_text().splitlines() if line.strip()}
    stack = mods["quality_run"].Stack(run_dir / "state")
    stack.start()
    t0 = time.perf_counter()
    try:
        with records_path.open("a") as out:
            for i, task in enumerate(tasks, 1):
                if task.id in done:
                    continue
                rec = run_task(stack, mods, task, run_dir / "answers" / task.id)
                out.write(json.dumps(rec) + "\n")
                out.flush()
                a, n = rec["ask"], rec["navigator"]
                print(f"[{i}/{len(tasks)} {time.perf_counter() - t0:6.0f}s] {task.id} {task.split} "
                      f"ask hit={a.get('citation_file_hit')} prec={a.get('citation_line_precision', 0):.2f} "
                      f"({a.get('exit')}, {a['seconds']}s, {a.get('stop_reason')}) nav hit={n.get('file_hit')} "
                      f"({n['seconds']}s)", flush=True)
    finally:
        stack.stop()
    meta["incidents"] = stack.incidents
    (run_dir / "meta.json").write_text(json.dumps(meta, indent=2))
    write_results(run_dir)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run", help="ask + the navigator's 8k pack on every task, scored")
    run.add_argument("--split", choices=["dev", "test", "all"], default="all")
    run.add_argument("--limit", type=int, default=0, help="first N tasks per repository (0: all)")
    run.add_argument("--bench-dir", type=Path, default=None, help="the context-quality benchmark's bench/ folder")
    run.add_argument("--run-dir", default=None, help="resume into this run directory")
    rep = sub.add_parser("report", help="rewrite the results from a run's records")
    rep.add_argument("run_dir", type=Path)
    args = parser.parse_args(argv)
    if args.cmd == "run":
        cmd_run(args)
    else:
        write_results(args.run_dir)


if __name__ == "__main__":
    main()
