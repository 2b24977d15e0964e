"""Context-quality benchmark (issue 11): the product's default path vs BM25 baselines, per split.

For every task of ``bench/tasks/quality_tasks.jsonl`` (see ``bench/QUALITY.md``)
and every budget, in the same run:

* **navigator** -- ``navigator explore REPO GOAL --tokens B --json`` as its own
  process against ONE running ``navigator server`` + ONE long-running
  ``navigator worker`` (``bench/quality_run.py``); the ``context.md`` it reports
  is scored;
* **engine** -- ``repo-map generate REPO --goal GOAL --budget B``, scored the same way;
* **bm25-file** / **bm25-chunk** -- the baselines of ``bench/quality_baselines.py``,
  filling the same budget (exact counter).

Scoring: ``bench/quality_score.py``; tables: ``bench/quality_report.py``.

Usage::

    nice .venv/bin/python bench/quality.py run --split all            # dev then test, 4 budgets
    .venv/bin/python bench/quality.py run --split dev --limit 3 --budgets 8192   # smoke test
    .venv/bin/python bench/quality.py report RUN_DIR                  # re-write the results from records

Raw records and every context.md go to ``<data>/quality-runs/<stamp>/``
(outside the repository); results to ``bench/results/quality-<split>.{md,json}``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from _project import compile_bytecode, count_tokens, engine_symbols, open_engine
from quality_baselines import Retriever, chunk_docs, file_docs, pack
from quality_report import latest, write_results
from quality_run import CallResult, Stack
from quality_score import map_section, parse_context, read_source, score_context
from taskset import DATA_ROOT, Task, load_tasks, materialize, repo_dir

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
BUDGETS = (4096, 8192, 16384, 32768)
_PLAN = re.compile(r"^Plan \(([^)]*)\)", re.M)
_STARTED = re.compile(r"^started (\S+) \(", re.M)
_PLAN_MD = re.compile(r"^### Plan \(([^)]*)\)", re.M)


def provenance() -> dict:
    """Which code ran, where, when."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True).stdout.strip()

    return {
        "commit": git("rev-parse", "HEAD"),
        "commit_subject": git("log", "-1", "--format=%s"),
        "dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
        "date_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(shlex.quote(a) for a in [Path(sys.executable).name, *sys.argv]),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "platform": platform.platform(), "nice": os.nice(0)},
    }


# ---------------------------------------------------------------- one task
def _scored(text: str, task: Task, source, budget: int) -> dict:
    parsed = parse_context(text, source)
    tokens = count_tokens(text)
    return {**score_context(parsed, task.gold_lines, source), "tokens": tokens, "over_budget": tokens > budget}


def _call_fields(call: CallResult) -> dict:
    out = {"exit": call.exit_code, "seconds": call.seconds, "load1": call.load1}
    if not call.ok:
        out["stderr_tail"] = call.stderr_tail
    return out


def _navigator(stack: Stack, task: Task, root: Path, budget: int, source, keep: Path) -> dict:
    call = stack.explore(root, task.goal, budget)
    rec = _call_fields(call)
    if call.worker_died:
        rec["worker_died"] = True
        stack.check(f"{task.id} B={budget}")  # restart it now; the pair is re-run at the end
        if started := _STARTED.search(call.stderr):
            rec["terminated_exit"] = stack.terminate(started.group(1))
    rec["worker"] = "in-process" if "in-process worker" in call.stderr else (
        "running worker" if "workers on" in call.stderr else "?")
    plan = _PLAN.search(call.stderr)
    rec["plan"] = plan.group(1) if plan else None
    text = ""
    try:
        result = json.loads(call.stdout)
    except json.JSONDecodeError:
        result = None
        rec["error"] = "no JSON result on stdout"
    if result is not None:
        meta = result.get("map_metadata") or {}
        pack = result.get("pack") or {}
        # the map the user gets is the pack's (rendered smaller when the frame needed room), not the run's
        rec.update(stop_reason=result.get("stop_reason"), stop_detail=result.get("stop_detail"),
                   iterations=result.get("iterations"), decisions=result.get("decisions"),
                   model_attempts=result.get("model_attempts"),
                   tokens_header=pack.get("map_tokens", meta.get("tokens_used")),
                   map_rerendered=pack.get("map_rerendered"), workflow_id=result.get("workflow_id"))
        path = result.get("context_path")
        if path and Path(path).is_file():
            context = Path(path).read_text(encoding="utf-8")
            text = map_section(context)
            # the pack names the stage plan; the progress lines only show it when a poll caught it
            if plan_md := _PLAN_MD.search(context):
                rec["plan"] = plan_md.group(1)
            rec["context_tokens"] = count_tokens(context)
            rec["context_over_budget"] = rec["context_tokens"] > budget  # the whole pack, frame included
            keep.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, keep / f"{budget}-navigator-context.md")
            report = Path(path).with_name("report.json")
            if report.is_file():
                shutil.copy(report, keep / f"{budget}-navigator-report.json")
        else:
            rec["error"] = f"context.md not found ({path})"
    rec["has_context"] = bool(text)
    return {**rec, **_scored(text, task, source, budget)}


def _engine(stack: Stack, task: Task, root: Path, budget: int, source, keep: Path) -> dict:
    call = stack.engine(root, task.goal, budget)
    rec = _call_fields(call)
    text = call.stdout if call.ok else ""
    head = re.match(r"# repo-map (\{.*\})", text)
    rec["tokens_header"] = json.loads(head.group(1)).get("tokens") if head else None
    rec["has_context"] = bool(text)
    if text:
        keep.mkdir(parents=True, exist_ok=True)
        (keep / f"{budget}-engine-map.txt").write_text(text, encoding="utf-8")
    return {**rec, **_scored(text, task, source, budget)}


#: run each task in a checkout whose ``.git`` holds the parent's history and nothing after it
#: (``--with-git``; ``corpus.materialize_with_git``); default: a ``git archive`` tree without history
WITH_GIT = False


def checkout(task: Task) -> Path:
    """The task's parent revision on disk: with its history (``WITH_GIT``) or without."""
    if WITH_GIT:
        from corpus import materialize_with_git

        return materialize_with_git(task)
    materialize([task])
    return repo_dir(task)


def run_task(stack: Stack, task: Task, budgets: list[int], run_dir: Path) -> list[dict]:
    """Every method at every budget for one task (one checkout, materialised once)."""
    root = checkout(task)
    keep = run_dir / "contexts" / task.id
    stack.check(task.id)
    index = stack.index(root)
    t0 = time.perf_counter()
    engine = open_engine(root, stack.cache_dir)
    source = read_source(root)
    retrievers = {
        "bm25-file": Retriever(file_docs(engine.files, source), source),
        "bm25-chunk": Retriever(chunk_docs(engine.files, source, lambda p: engine_symbols(engine, p)), source),
    }
    build_s = time.perf_counter() - t0
    ranked = {}
    rank_s = {}
    for name, ret in retrievers.items():
        t1 = time.perf_counter()
        ranked[name] = ret.rank(task.goal)
        rank_s[name] = time.perf_counter() - t1
    costs: dict = {}
    records = []
    for budget in budgets:
        rec = {"task": task.id, "repo": task.repo, "split": task.split, "language": task.language,
               "budget": budget, "index": {"exit": index.exit_code, "seconds": index.seconds},
               "baseline_build_seconds": round(build_s, 3)}
        rec["engine"] = _engine(stack, task, root, budget, source, keep)
        rec["navigator"] = _navigator(stack, task, root, budget, source, keep)
        for name in retrievers:
            t1 = time.perf_counter()
            text = pack(ranked[name], budget, source, count_tokens, costs)
            secs = rank_s[name] + time.perf_counter() - t1
            rec[name] = {"exit": 0, "seconds": round(secs, 3), "has_context": bool(text),
                         **_scored(text, task, source, budget)}
        rec["worker_rss_mb"] = stack.worker_rss_mb()
        records.append(rec)
    return records


# ---------------------------------------------------------------- driver
def cmd_run(args: argparse.Namespace) -> None:
    tasks = load_tasks(args.tasks)
    splits = ["dev", "test"] if args.split == "all" else [args.split]
    tasks = [t for s in splits for t in tasks if t.split == s]
    if args.repos:
        tasks = [t for t in tasks if t.repo in args.repos]
    if args.limit:
        seen: Counter[str] = Counter()
        kept = []
        for t in tasks:
            seen[t.repo] += 1
            if seen[t.repo] <= args.limit:
                kept.append(t)
        tasks = kept
    run_dir = args.run_dir or DATA_ROOT / "quality-runs" / dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    run_dir.mkdir(parents=True, exist_ok=True)
    records_path = run_dir / "records.jsonl"
    done = {k for k, r in latest(_read_records(records_path)).items()
            if not _env_failed(r) and k[0] not in args.redo}
    global WITH_GIT
    WITH_GIT = args.with_git
    meta = {"provenance": provenance(), "budgets": args.budgets, "splits": splits, "tasks_file": str(args.tasks),
            "n_tasks": len(tasks), "load_start": os.getloadavg(), "with_git": WITH_GIT,
            "bytecode": compile_bytecode()}
    (run_dir / "meta.json").write_text(json.dumps(meta, indent=1))
    print(f"run dir {run_dir}: {len(tasks)} tasks x {len(args.budgets)} budgets", file=sys.stderr)
    stack = Stack(run_dir / "state")
    # a plain `kill` must still stop the server and worker (background jobs ignore SIGINT)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    stack.start()
    t_start = time.time()
    try:
        with records_path.open("a") as out:
            pending = [(i, task, [b for b in args.budgets if (task.id, b) not in done])
                       for i, task in enumerate(tasks, 1)]
            for rerun in (False, True):
                for i, task, todo in pending:
                    if todo:
                        reason = args.redo_reason if task.id in args.redo else (
                            "the worker exited under the first run" if rerun else "")
                        _run_and_log(stack, task, todo, run_dir, out, f"{i}/{len(tasks)}", t_start, reason)
                # pairs whose worker died under them: once more, at the end (see quality_run)
                again = {k for k, r in latest(_read_records(records_path)).items() if _env_failed(r)}
                pending = [(i, t, [b for b in args.budgets if (t.id, b) in again]) for i, t, _ in pending]
                if rerun or not again:
                    break
    finally:
        stack.stop()
        meta.update(load_end=os.getloadavg(), wall_seconds=round(time.time() - t_start, 1),
                    incidents=stack.incidents, worker_restarts=stack.worker_restarts)
        (run_dir / "meta.json").write_text(json.dumps(meta, indent=1))
    if not args.no_report:
        write_results(run_dir, BENCH / "results", args.tasks)


def _run_and_log(stack: Stack, task: Task, budgets: list[int], run_dir: Path, out, where: str,
                 t_start: float, reason: str = "") -> None:
    for rec in run_task(stack, task, budgets, run_dir):
        if reason:
            rec["rerun_reason"] = reason
        out.write(json.dumps(rec) + "\n")
        out.flush()
        nav = rec["navigator"]
        print(f"[{where} {time.time() - t_start:6.0f}s] {task.id} {task.split} B={rec['budget']} "
              f"nav={nav['line_recall']:.2f} ({nav['exit']}, {nav['seconds']:.1f}s, {nav.get('stop_reason')}) "
              f"eng={rec['engine']['line_recall']:.2f} file={rec['bm25-file']['line_recall']:.2f} "
              f"chunk={rec['bm25-chunk']['line_recall']:.2f} rss={rec['worker_rss_mb']}",
              file=sys.stderr, flush=True)


def _env_failed(rec: dict) -> bool:
    return bool(rec["navigator"].get("worker_died"))


def _read_records(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def cmd_report(args: argparse.Namespace) -> None:
    write_results(args.run_dir, args.out, args.tasks)


def cmd_show(args: argparse.Namespace) -> None:
    """Each gold line of one task and which method's context shows it (from a run's saved contexts)."""
    task = next(t for t in load_tasks(args.tasks) if t.id == args.task)
    root = repo_dir(task)
    materialize([task])
    source = read_source(root)
    keep = args.run_dir / "contexts" / task.id
    texts = {}
    nav = keep / f"{args.budget}-navigator-context.md"
    texts["navigator"] = map_section(nav.read_text()) if nav.is_file() else ""
    eng = keep / f"{args.budget}-engine-map.txt"
    texts["engine"] = eng.read_text() if eng.is_file() else ""
    engine = open_engine(root, args.run_dir / "state" / "cache" / "repomap")
    for name, docs in (("bm25-file", file_docs(engine.files, source)),
                       ("bm25-chunk", chunk_docs(engine.files, source, lambda p: engine_symbols(engine, p)))):
        texts[name] = pack(Retriever(docs, source).rank(task.goal), args.budget, source, count_tokens)
    parsed = {m: parse_context(t, source) for m, t in texts.items()}
    print(f"{task.id} ({task.repo}, {task.split}) B={args.budget}\ngoal: {task.goal}\n")
    print("  ".join(f"{m[:10]:>10}" for m in texts) + "  gold line")
    for path, numbers in task.gold_lines.items():
        for n in numbers:
            marks = []
            for m in texts:
                f = parsed[m].files.get(path)
                marks.append("verbatim" if f and n in f.verbatim else "signature" if f and n in f.signature
                             else "doc" if f and n in f.doc else f"L{f.level} file" if f else "-")
            text = source(path)[n - 1] if n <= len(source(path)) else ""
            print("  ".join(f"{x:>10}" for x in marks) + f"  {path}:{n}: {text.strip()[:70]}")


def main(argv: list[str] | None = None) -> None:
    """CLI entry point."""
    ap = argparse.ArgumentParser(description="context-quality benchmark (issue 11)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run the benchmark (and write the results)")
    r.add_argument("--tasks", type=Path, default=BENCH / "tasks" / "quality_tasks.jsonl")
    r.add_argument("--split", choices=("dev", "test", "all"), default="dev")
    r.add_argument("--budgets", type=int, nargs="+", default=list(BUDGETS))
    r.add_argument("--repos", nargs="*", default=[], help="only these owner/name repositories")
    r.add_argument("--limit", type=int, default=0, help="only the first N tasks of each repository")
    r.add_argument("--run-dir", type=Path, default=None, help="resume a run (skips recorded task x budget)")
    r.add_argument("--no-report", action="store_true", help="do not write bench/results")
    r.add_argument("--with-git", action="store_true",
                   help="checkouts whose .git holds the parent's history (nothing after it); reports *-git.md")
    r.add_argument("--redo", nargs="*", default=[], help="with --run-dir: run these task ids again (their new "
                   "records supersede the old ones, which the report lists)")
    r.add_argument("--redo-reason", default="re-run on request", help="why (written into the new records)")
    r.set_defaults(func=cmd_run)
    p = sub.add_parser("report", help="write bench/results/quality-<split>.{md,json} from a run's records")
    p.add_argument("run_dir", type=Path)
    p.add_argument("--tasks", type=Path, default=BENCH / "tasks" / "quality_tasks.jsonl")
    p.add_argument("--out", type=Path, default=BENCH / "results")
    p.set_defaults(func=cmd_report)
    w = sub.add_parser("show", help="which method shows each gold line of one task (from a run's contexts)")
    w.add_argument("run_dir", type=Path)
    w.add_argument("task")
    w.add_argument("budget", type=int)
    w.add_argument("--tasks", type=Path, default=BENCH / "tasks" / "quality_tasks.jsonl")
    w.set_defaults(func=cmd_show)
    args = ap.parse_args(argv)
    args.func(args)


if __name__ == "__main__":
    main()
