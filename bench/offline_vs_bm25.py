"""Benchmark: the ``offline`` navigator policy vs plain BM25 whole-file retrieval.

Both methods get the same goal (a redacted commit message) and the same token
budget, counted with the exact counter ``repomap.tokens.count_tokens``:

* **bm25** (baseline, bench-only code below): Okapi BM25 over whole files of the
  engine's file list; files are taken whole in rank order while they fit (a file
  that does not fit is skipped and the next one tried).
* **bm25-trunc** (a kinder baseline): the same, but the first file that does not
  fit is cut to fill the rest of the budget.
* **offline**: the offline policy loop in-process (no Temporal): decide ->
  ``FlightPlan.apply`` -> ``RepoMap.render`` until it finalizes or hits the
  iteration cap; the final rendered map is scored.

Scores per task (see ``bench/OFFLINE.md``): gold-file hit rate anywhere in the
context and at level >= 2 (outline or more; a BM25 file counts as full), and
gold-line recall: a gold line counts when its text (whitespace removed) appears
inside that file's section of the context. Gold lines shorter than
``MIN_LINE_CHARS`` non-space characters (``)``, ``else:``) are not scored.

Usage::

    .venv/bin/python bench/offline_vs_bm25.py --budgets 4096 8192 16384 \
        --out bench/results/offline-vs-bm25
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from taskset import Task, load_tasks, materialize, repo_dir  # noqa: E402

from durable_navigator.activities.models.offline import OfflineTurn, offline_decision  # noqa: E402
from durable_navigator.activities.models.offline.terms import STOPWORDS, split_identifier  # noqa: E402
from durable_navigator.navtypes.flightplan import FlightPlan  # noqa: E402

MIN_LINE_CHARS = 4
MAX_ITERATIONS = 8
CACHE_DIR = Path("/work/bench-data/cache")
BM25_K1, BM25_B = 1.5, 0.75


# ---------------------------------------------------------------- BM25 baseline (bench-only)
def bm25_tokens(text: str) -> list[str]:
    """Plain lexical tokens: lower-cased words and identifier parts, English stopwords dropped."""
    out: list[str] = []
    for word in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text):
        low = word.lower()
        if low not in STOPWORDS and len(low) >= 2:
            out.append(low)
        parts = split_identifier(word)
        if len(parts) > 1:
            out.extend(p for p in parts if p not in STOPWORDS)
    return out


def bm25_rank(docs: dict[str, str], query: str) -> list[tuple[str, float]]:
    """Okapi BM25 of every document for ``query``; ties broken by path."""
    bags = {p: Counter(bm25_tokens(t)) for p, t in docs.items()}
    lengths = {p: sum(b.values()) for p, b in bags.items()}
    avg = (sum(lengths.values()) / len(lengths)) if lengths else 1.0
    q = list(dict.fromkeys(bm25_tokens(query)))
    n = len(bags)
    df = {t: sum(1 for b in bags.values() if t in b) for t in q}
    idf = {t: math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in q}
    scores = []
    for p, bag in bags.items():
        s = 0.0
        for t in q:
            tf = bag.get(t, 0)
            if tf:
                s += idf[t] * tf * (BM25_K1 + 1) / (tf + BM25_K1 * (1 - BM25_B + BM25_B * lengths[p] / (avg or 1)))
        scores.append((p, s))
    scores.sort(key=lambda x: (-x[1], x[0]))
    return scores


def bm25_context(docs: dict[str, str], query: str, budget: int, truncate: bool, count) -> tuple[str, dict[str, int]]:
    """Whole files in BM25 order while they fit; returns the context and path -> level (4)."""
    parts: list[str] = []
    used = 0
    levels: dict[str, int] = {}
    for path, score in bm25_rank(docs, query):
        if score <= 0:
            break
        block = f"### {path}\n{docs[path]}\n"
        cost = count(block)
        if used + cost <= budget:
            parts.append(block)
            used += cost
            levels[path] = 4
        elif truncate:
            lines = block.splitlines(keepends=True)
            lo, hi = 0, len(lines)
            while lo < hi:  # longest prefix that fits
                mid = (lo + hi + 1) // 2
                if used + count("".join(lines[:mid])) <= budget:
                    lo = mid
                else:
                    hi = mid - 1
            if lo > 1:
                parts.append("".join(lines[:lo]))
                levels[path] = 4
            break
    text = "".join(parts)
    while count(text) > budget and parts:  # BPE merges across blocks can add a token or two
        parts.pop()
        text = "".join(parts)
    return text, levels


# ---------------------------------------------------------------- scoring
def _norm(line: str) -> str:
    return re.sub(r"\s+", "", line).rstrip(":")


_HEADER = re.compile(r"^(?:### )?(\S+)(?: \[L\d[^\]]*\].*)?\n?$")


def sections(text: str, paths: list[str]) -> dict[str, str]:
    """Split a context into per-file sections.

    A section starts at a file's header line: ``path [L2 4.2K 120L] ...`` (the
    repo-map layout) or ``### path`` (the BM25 contexts built here).
    """
    starts: list[tuple[int, str]] = []
    pathset = set(paths)
    offset = 0
    for line in text.splitlines(keepends=True):
        m = _HEADER.match(line)
        if m and m.group(1) in pathset:
            starts.append((offset, m.group(1)))
            pathset.discard(m.group(1))
        offset += len(line)
    out: dict[str, str] = {}
    for i, (pos, path) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(text)
        out[path] = text[pos:end]
    return out


@dataclass
class Score:
    """Per-task, per-method scores."""

    file_any: float
    file_l2: float
    line_recall: float
    tokens: int
    gold_lines: int
    extra: dict = field(default_factory=dict)


def score(task: Task, root: Path, text: str, levels: dict[str, int], count) -> Score:
    """Score one context (its text and the level of every file it shows)."""
    secs = sections(text, list(levels))
    hit_any = sum(1 for f in task.gold_files if levels.get(f, 0) >= 1)
    hit_l2 = sum(1 for f in task.gold_files if levels.get(f, 0) >= 2)
    total = found = 0
    for path, numbers in task.gold_lines.items():
        src = (root / path).read_text(encoding="utf-8", errors="replace").splitlines()
        body = _norm(secs.get(path, ""))
        for n in numbers:
            if n > len(src) or len(_norm(src[n - 1])) < MIN_LINE_CHARS:
                continue
            total += 1
            found += _norm(src[n - 1]) in body
    n_files = len(task.gold_files)
    return Score(hit_any / n_files, hit_l2 / n_files, found / total if total else 0.0, count(text), total)


# ---------------------------------------------------------------- the offline loop
def run_offline(rm, goal: str, budget: int) -> tuple[str, dict[str, int], dict]:
    """Decide -> apply -> render until finalize or the cap; returns the final map."""
    plan = FlightPlan(token_budget=budget)
    result = rm.render(plan)
    meta = result.metadata
    log: list[tuple[str, str]] = []
    stop = "max_iterations"
    for it in range(1, MAX_ITERATIONS + 1):
        turn = OfflineTurn(goal=goal, flight_plan=plan, iteration=it, max_iterations=MAX_ITERATIONS, engine=rm,
                           map_metadata=meta, recent_decisions=tuple(log[-3:]))
        d = offline_decision(turn)
        log.append((d.action, d.reasoning))
        if d.action == "finalize_context":
            stop = "finalized"
            break
        plan = plan.apply(d.updates)
        result = rm.render(plan)
        meta = result.metadata
    levels = {f.path: f.level for f in result.files if f.level >= 1}
    return result.text, levels, {"iterations": len(log), "stop": stop, "decisions": log}


# ---------------------------------------------------------------- driver
def read_docs(rm) -> dict[str, str]:
    """The engine's files as text (binary / unreadable files are skipped, as the engine does)."""
    docs = {}
    for path in rm.files:
        try:
            docs[path] = (rm.root / path).read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
    return docs


def run(tasks: list[Task], budgets: list[int], verbose: bool) -> dict:
    """Every task x budget x method; returns the raw per-task records."""
    from durable_navigator.repomap import RepoMap
    from durable_navigator.repomap.tokens import count_tokens

    records = []
    for i, task in enumerate(tasks):
        root = repo_dir(task)
        rm = RepoMap.open(root, cache_dir=CACHE_DIR)
        docs = read_docs(rm)
        for budget in budgets:
            rec = {"task": task.id, "budget": budget}
            for name, trunc in (("bm25", False), ("bm25-trunc", True)):
                text, levels = bm25_context(docs, task.goal, budget, trunc, count_tokens)
                rec[name] = score(task, root, text, levels, count_tokens).__dict__
            t0 = time.perf_counter()
            text, levels, info = run_offline(rm, task.goal, budget)
            s = score(task, root, text, levels, count_tokens)
            s.extra = {"iterations": info["iterations"], "stop": info["stop"],
                       "seconds": round(time.perf_counter() - t0, 3),
                       "last_reasoning": info["decisions"][-1][1][:300] if info["decisions"] else ""}
            rec["offline"] = s.__dict__
            records.append(rec)
            if verbose:
                print(f"[{i + 1}/{len(tasks)}] {task.id} B={budget} lines bm25={rec['bm25']['line_recall']:.2f} "
                      f"trunc={rec['bm25-trunc']['line_recall']:.2f} offline={s.line_recall:.2f} "
                      f"files_l2 bm25={rec['bm25']['file_l2']:.2f} offline={s.file_l2:.2f} it={info['iterations']}",
                      file=sys.stderr)
    return {"records": records}


def summarize(records: list[dict], budgets: list[int]) -> dict:
    """Means and paired win/tie/loss of offline vs each baseline, per budget."""
    out = {}
    for b in budgets:
        rs = [r for r in records if r["budget"] == b]
        row = {"tasks": len(rs)}
        for m in ("bm25", "bm25-trunc", "offline"):
            for k in ("file_any", "file_l2", "line_recall", "tokens"):
                row[f"{m}.{k}"] = round(sum(r[m][k] for r in rs) / max(len(rs), 1), 4)
        for base in ("bm25", "bm25-trunc"):
            for k in ("file_l2", "line_recall", "file_any"):
                w = sum(1 for r in rs if r["offline"][k] > r[base][k] + 1e-9)
                l_ = sum(1 for r in rs if r["offline"][k] < r[base][k] - 1e-9)
                row[f"wtl.{base}.{k}"] = [w, len(rs) - w - l_, l_]
        row["offline.mean_iterations"] = round(sum(r["offline"]["extra"]["iterations"] for r in rs) / max(len(rs), 1), 2)
        row["offline.finalized"] = sum(1 for r in rs if r["offline"]["extra"]["stop"] == "finalized")
        out[str(b)] = row
    return out


def provenance() -> str:
    """Which code produced the numbers: the repo HEAD and the last commits of the engine and policy."""
    import subprocess

    def last(*paths: str) -> str:
        out = subprocess.run(["git", "log", "-1", "--format=%h", "--", *paths], capture_output=True, text=True,
                             cwd=Path(__file__).resolve().parent.parent)
        return out.stdout.strip() or "?"

    dirty = subprocess.run(["git", "status", "--porcelain", "--", "repomap", "activities/models"],
                           capture_output=True, text=True, cwd=Path(__file__).resolve().parent.parent).stdout
    return (f"repomap at {last('repomap')}, offline policy at {last('activities/models')}"
            + (" (+ uncommitted changes)" if dirty.strip() else ""))


def markdown(summary: dict, n_tasks: int, repos: list[str], origin: str = "") -> str:
    """The results table for bench/results/offline-*.md."""
    lines = [
        "# offline policy vs BM25 whole-file retrieval",
        "",
        f"{n_tasks} tasks from {', '.join(repos)}; generated by `bench/offline_vs_bm25.py`"
        + (f" ({origin})" if origin else "") + ".",
        "",
        "| budget | method | gold files anywhere | gold files at L>=2 | gold-line recall | tokens used |",
        "|---|---|---|---|---|---|",
    ]
    for b, row in summary.items():
        for m in ("bm25", "bm25-trunc", "offline"):
            lines.append(
                f"| {b} | {m} | {row[f'{m}.file_any']:.3f} | {row[f'{m}.file_l2']:.3f} | "
                f"{row[f'{m}.line_recall']:.3f} | {row[f'{m}.tokens']:.0f} |"
            )
    lines += ["", "Paired offline vs baseline, win/tie/loss per task:", "",
              "| budget | vs | gold-line recall | files at L>=2 | files anywhere | offline iterations (mean) | finalized |",
              "|---|---|---|---|---|---|---|"]
    for b, row in summary.items():
        for base in ("bm25", "bm25-trunc"):
            f = lambda k: "/".join(map(str, row[f"wtl.{base}.{k}"]))  # noqa: E731
            lines.append(f"| {b} | {base} | {f('line_recall')} | {f('file_l2')} | {f('file_any')} | "
                         f"{row['offline.mean_iterations']} | {row['offline.finalized']}/{row['tasks']} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    """CLI entry point."""
    ap = argparse.ArgumentParser(description="offline policy vs BM25 at equal token budgets")
    ap.add_argument("--tasks", type=Path, default=Path("bench/tasks/offline_tasks.jsonl"))
    ap.add_argument("--budgets", type=int, nargs="+", default=[4096, 8192, 16384])
    ap.add_argument("--limit", type=int, default=0, help="only the first N tasks (0 = all)")
    ap.add_argument("--out", type=Path, default=Path("bench/results/offline-vs-bm25"))
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    tasks = load_tasks(args.tasks)
    if args.limit:
        tasks = tasks[: args.limit]
    materialize(tasks)
    raw = run(tasks, args.budgets, args.verbose)
    summary = summarize(raw["records"], args.budgets)
    repos = sorted({t.mirror.replace("+", "/") for t in tasks})
    args.out.parent.mkdir(parents=True, exist_ok=True)
    origin = provenance()
    report = markdown(summary, len(tasks), repos, origin)
    args.out.with_suffix(".json").write_text(json.dumps({"summary": summary, "origin": origin, **raw}, indent=1))
    args.out.with_suffix(".md").write_text(report)
    print(report)


if __name__ == "__main__":
    main()
