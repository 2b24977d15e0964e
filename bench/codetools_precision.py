"""Benchmark: how precise the code tools are (``search_codebase``, ``get_callers``, ``get_callees``).

Reads the context-quality task set (issue 11, ``bench/tasks/quality_tasks.jsonl``, built by
``bench/taskset.py``; checkouts under ``/work/bench-data/repos``) and
measures, on ONE split (``dev`` unless told otherwise; the test split is for
reporting the navigator, never for tuning the tools):

* **search** — for every task, two queries: the one the offline model's tool round
  sends (``tool_round``: the goal's identifiers + its first terms) and the raw goal.
  gold-file hit@k (a top-k hit is in a changed file), gold-symbol hit@k (a top-k hit
  carries a line range that contains a changed line), "usable" (any hit at all).
* **callers** (Python repositories) — targets are the gold symbols (the innermost
  function/method/class around a changed line, deduplicated per repository); the
  reference is jedi's ``get_references`` from the definition (``scope='project'``
  on the checkout itself, its 30-file search cap lifted), restricted to the files the
  engine indexes, definitions excluded. Sites are ``(path, line)``; precision and
  recall are micro-averaged (all sites pooled) and macro-averaged (per target).
* **callees** (Python) — the reference for a target S: every repository definition D
  whose name occurs in S's body as code and whose jedi ``get_references`` has a site
  inside S. Compared as sets of definition ids.
* **hand-checked** (Go, Rust, JavaScript, Ruby, and Python) — callers of symbols whose
  call sites were read and judged by hand: ``bench/codetools_handchecked.json``.
* **non-code hits** — caller sites in a file the engine does not parse (README,
  docs) or on a line where the name occurs only in a string, docstring or comment
  (Python: ``tokenize``; other languages: tree-sitter leaves). Must be 0.
* **latency** — wall seconds per engine call: the first call of an engine version
  (cold: jedi's first inference) and repeated calls (warm).

Usage::

    XDG_CACHE_HOME=/tmp/me/xdg .venv/bin/python bench/codetools_precision.py --label after \
        [--tasks /work/wt-bench/bench/tasks/quality_tasks.jsonl] [--split dev] [--targets 8]

Writes ``bench/results/codetools-<label>-<split>.json`` (every figure and per-target
detail) and prints the summary table (``--md`` writes it as Markdown too).
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import re
import statistics
import subprocess
import sys
import time
import tokenize
from collections import defaultdict
from pathlib import Path
from typing import Any

from temporalio.testing import ActivityEnvironment

from durable_navigator.activities.models.offline.tools import (
    OfflineToolConfig,
    hint_update,
    parse_tool_results,
    tool_round,
)
from durable_navigator.activities.tools import CodeToolActivities
from durable_navigator.navcore.run.tools import ToolRequest
from durable_navigator.navtypes.flightplan import FlightPlan, FlightPlanUpdate
from durable_navigator.workflows.blocks.tools import tool_result_lines
from durable_navigator.repomap import EngineConfig, RepoMap
from durable_navigator.repomap.parse_treesitter import language_for

HERE = Path(__file__).resolve().parent
#: the context-quality task set (issue 11): on main since the bench-quality merge; the
#: bench-quality worktree's copy is the fallback for a checkout without it
DEFAULT_TASKS = next((p for p in (HERE / "tasks" / "quality_tasks.jsonl",
                                  Path("/work/wt-bench/bench/tasks/quality_tasks.jsonl")) if p.exists()),
                     HERE / "tasks" / "quality_tasks.jsonl")
REPOS = Path("/work/bench-data/repos")
KS = (1, 5, 10)
SEARCH_LIMIT = 10
_CODE_KINDS = {"function", "method", "class"}


# ---------------------------------------------------------------- task set

def load_tasks(path: Path, split: str) -> list[dict[str, Any]]:
    tasks = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [t for t in tasks if t["split"] == split]


def checkout(task: dict[str, Any]) -> Path:
    return REPOS / f"{task['repo'].split('/')[1]}@{task['parent'][:12]}"


def gold_symbols(engine: RepoMap, task: dict[str, Any]) -> list[Any]:
    """The innermost function/method/class around each gold line (deduplicated, in order)."""
    out: dict[str, Any] = {}
    for path, lines in task["gold_lines"].items():
        if path not in engine._built.records:
            continue
        syms = [s for s in engine.symbols(path) if s.kind in _CODE_KINDS]
        for ln in lines:
            around = [s for s in syms if s.start_line <= ln <= s.end_line]
            if around:
                best = min(around, key=lambda s: (s.end_line - s.start_line, s.id))
                out.setdefault(best.id, best)
    return list(out.values())


# ---------------------------------------------------------------- search

def _hit_range(engine: RepoMap, hit: Any) -> tuple[int, int] | None:
    end = getattr(hit, "end_line", None)
    if hit.line and end:
        return hit.line, end
    if hit.symbol:  # the old format: a start line only; the symbol's span from the index
        for s in engine.find_symbol(hit.symbol):
            return s.start_line, s.end_line
    return None


def search_scores(engine: RepoMap, task: dict[str, Any], query: str) -> dict[str, Any]:
    t0 = time.perf_counter()
    hits = engine.search(query, limit=SEARCH_LIMIT)
    secs = time.perf_counter() - t0
    gold = task["gold_lines"]
    file_hit = [h.path in gold for h in hits]
    sym_hit = []
    for h in hits:
        rng = _hit_range(engine, h) if h.path in gold else None
        sym_hit.append(bool(rng) and any(rng[0] <= ln <= rng[1] for ln in gold[h.path]))
    return {"query": query, "hits": len(hits), "seconds": secs,
            **{f"file@{k}": any(file_hit[:k]) for k in KS}, **{f"symbol@{k}": any(sym_hit[:k]) for k in KS}}


def tool_query(goal: str) -> str:
    calls = tool_round(goal, FlightPlan(), 1, 20, (), OfflineToolConfig())
    return next((c.args["query"] for c in calls if c.name == "search_codebase"), goal)


def offline_round(engine: RepoMap, task: dict[str, Any]) -> dict[str, Any]:
    """The offline model's first-turn tool round, end to end: the tool activities' text, the
    model's parser and the hints it adds to its survey. Did they point at a changed file/line?"""
    cfg = OfflineToolConfig()
    calls = tool_round(task["goal"], FlightPlan(), 1, 20, (), cfg)

    async def engines(root: str) -> RepoMap:
        return engine

    tools = CodeToolActivities(engine_for=engines)

    async def run_all() -> list[Any]:
        env = ActivityEnvironment()
        return [await env.run(getattr(tools, c.name), ToolRequest(repo_root=str(engine.root), call=c))
                for c in calls]

    t0 = time.perf_counter()
    results = asyncio.run(run_all())
    secs = time.perf_counter() - t0
    hints = parse_tool_results(tuple(tool_result_lines(results)))
    update, _ = hint_update(FlightPlanUpdate(), hints, task["goal"], [], cfg, lambda ex, p: False)
    gold = task["gold_lines"]
    focus = [f.glob for f in update.add_focus_paths]
    spans = []
    for f in update.add_focus_symbols:
        for s in engine.find_symbol(f.symbol):
            spans.append((s.path, s.start_line, s.end_line))
    return {"calls": [c.name for c in calls], "usable": bool(focus or spans), "seconds": secs,
            "gold_file_focused": any(p in gold for p in focus),
            "gold_line_expanded": any(p in gold and any(a <= ln <= b for ln in gold[p]) for p, a, b in spans)}


# ---------------------------------------------------------------- references

def _jedi_project(root: Path) -> Any:
    import jedi
    import jedi.inference.references as refs

    # jedi stops a project-wide search after 30 parsed files (an editor's latency
    # trade-off); the reference must be complete
    refs._PARSED_FILE_LIMIT = 1_000_000
    refs._OPENED_FILE_LIMIT = 1_000_000
    return jedi.Project(root)


def _name_position(engine: RepoMap, sym: Any) -> tuple[int, int] | None:
    """(line, column) of the definition's name token."""
    text = engine.read_lines(sym.path, sym.start_line, sym.end_line)
    for i, line in enumerate(text.splitlines()):
        for kw in ("def ", "class "):
            at = line.find(f"{kw}{sym.name}")
            if at >= 0:
                return sym.start_line + i, at + len(kw)
    return None


def jedi_references(engine: RepoMap, project: Any, sym: Any) -> set[tuple[str, int]] | None:
    import jedi

    pos = _name_position(engine, sym)
    if pos is None:
        return None
    root = Path(engine.root)
    script = jedi.Script(path=str(root / sym.path), project=project, environment=jedi.InterpreterEnvironment())
    out = set()
    for r in script.get_references(*pos, scope="project"):
        if r.module_path is None or r.is_definition():
            continue
        try:
            rel = Path(r.module_path).resolve().relative_to(root).as_posix()
        except ValueError:
            continue
        if rel in engine._built.records and (rel, r.line) != (sym.path, pos[0]):
            out.add((rel, r.line))
    return out


def _code_lines(engine: RepoMap, path: str, name: str, cache: dict[str, set[int]]) -> set[int]:
    """Lines of ``path`` where ``name`` occurs as code (not in a string, docstring or comment)."""
    key = f"{path}\0{name}"
    if key in cache:
        return cache[key]
    text = engine.read_lines(path, 1, 1 << 30)
    lines: set[int] = set()
    if path.endswith((".py", ".pyi")):
        try:
            for tok in tokenize.generate_tokens(io.StringIO(text).readline):
                if tok.type == tokenize.NAME and tok.string == name:
                    lines.add(tok.start[0])
        except (tokenize.TokenError, SyntaxError, IndentationError):
            pass
    elif language_for(path):
        lines = _ts_code_lines(path, text, name)
    cache[key] = lines
    return lines


def _ts_code_lines(path: str, text: str, name: str) -> set[int]:
    from durable_navigator.repomap.parse_treesitter import _parser_and_query

    parser, _ = _parser_and_query(language_for(path) or "")
    tree = parser.parse(text.encode())
    out: set[int] = set()
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if "comment" in node.type or node.type in ("string", "string_content", "string_fragment",
                                                   "interpreted_string_literal", "raw_string_literal",
                                                   "template_string", "string_literal"):
            continue
        if node.child_count == 0 and node.text == name.encode():
            out.add(node.start_point[0] + 1)
        stack.extend(node.children)
    return out


def non_code(engine: RepoMap, sites: set[tuple[str, int]], name: str, cache: dict[str, set[int]]) -> int:
    return sum(1 for p, ln in sites if ln not in _code_lines(engine, p, name, cache))


def pr(tool: set[Any], ref: set[Any]) -> dict[str, Any]:
    tp = len(tool & ref)
    return {"tool": len(tool), "ref": len(ref), "tp": tp,
            "precision": tp / len(tool) if tool else (1.0 if not ref else 0.0),
            "recall": tp / len(ref) if ref else 1.0}


def timed(fn: Any, *args: Any) -> tuple[Any, float]:
    t0 = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t0


def timed_cpu(fn: Any, *args: Any) -> tuple[Any, float, float]:
    """(result, wall seconds, this thread's CPU seconds): on a loaded shared machine the CPU time is
    what an idle machine's wall time would be, the wall time what a user waited here."""
    t0, c0 = time.perf_counter(), time.thread_time()
    out = fn(*args)
    return out, time.perf_counter() - t0, time.thread_time() - c0


def callers_of(engine: RepoMap, sid: str) -> tuple[set[tuple[str, int]], float]:
    refs, secs = timed(engine.callers, sid)
    return {(r.path, r.line) for r in refs if getattr(r, "resolved", True)}, secs


def callee_reference(engine: RepoMap, project: Any, sym: Any, ref_cache: dict[str, Any]) -> set[str]:
    body = engine.read_lines(sym.path, sym.start_line, sym.end_line)
    names: set[str] = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(body).readline):
            if tok.type == tokenize.NAME:
                names.add(tok.string)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    names.discard(sym.name)
    out = set()
    for name in sorted(names):
        for d in engine.find_symbol(name):
            if d.kind not in _CODE_KINDS or not d.path.endswith(".py") or d.id == sym.id:
                continue
            if d.id not in ref_cache:
                ref_cache[d.id] = jedi_references(engine, project, d) or set()
            if any(p == sym.path and sym.start_line <= ln <= sym.end_line for p, ln in ref_cache[d.id]):
                out.add(d.id)
    return out


# ---------------------------------------------------------------- run

def run(args: argparse.Namespace) -> dict[str, Any]:
    tasks = load_tasks(args.tasks, args.split)
    if args.repos:
        tasks = [t for t in tasks if t["repo"] in args.repos]
    cache_dir = Path(args.cache_dir)
    search_rows: list[dict[str, Any]] = []
    offline_rows: list[dict[str, Any]] = []
    caller_rows: list[dict[str, Any]] = []
    callee_rows: list[dict[str, Any]] = []
    first_call: list[float] = []
    per_repo_targets: dict[str, int] = defaultdict(int)
    per_repo_callees: dict[str, int] = defaultdict(int)
    seen: set[tuple[str, str]] = set()
    code_cache: dict[str, set[int]] = {}
    for n, task in enumerate(tasks, 1):
        root = checkout(task)
        engine = RepoMap.open(root, config=args.config, cache_dir=cache_dir)
        code_cache.clear()
        for kind, query in (("tool", tool_query(task["goal"])), ("goal", task["goal"])):
            search_rows.append({"task": task["id"], "repo": task["repo"], "kind": kind,
                                **search_scores(engine, task, query)})
        offline_rows.append({"task": task["id"], "repo": task["repo"], **offline_round(engine, task)})
        if args.search_only or task["language"] != "python" or per_repo_targets[task["repo"]] >= args.targets:
            continue
        project = None
        cold = True
        for sym in gold_symbols(engine, task):
            if (task["repo"], sym.id.split("::", 1)[1]) in seen or per_repo_targets[task["repo"]] >= args.targets:
                continue
            seen.add((task["repo"], sym.id.split("::", 1)[1]))
            project = project or _jedi_project(Path(engine.root))
            ref = jedi_references(engine, project, sym)
            if ref is None:
                continue
            tool, secs = callers_of(engine, sym.id)
            if cold:
                first_call.append(secs)
                cold = False
            _, warm = callers_of(engine, sym.id)
            per_repo_targets[task["repo"]] += 1
            caller_rows.append({"task": task["id"], "repo": task["repo"], "symbol": sym.id, **pr(tool, ref),
                                "non_code": non_code(engine, tool, sym.name, code_cache), "seconds": secs,
                                "warm_seconds": warm, "missed": sorted(ref - tool)[:5],
                                "extra": sorted(tool - ref)[:5]})
            if per_repo_callees[task["repo"]] < args.callee_targets and sym.kind != "class":
                per_repo_callees[task["repo"]] += 1
                cref = callee_reference(engine, project, sym, {})
                got, csecs = timed(engine.callees, sym.id)
                callee_rows.append({"task": task["id"], "repo": task["repo"], "symbol": sym.id,
                                    **pr({r.symbol_id for r in got}, cref), "seconds": csecs,
                                    "missed": sorted(cref - {r.symbol_id for r in got})[:5],
                                    "extra": sorted({r.symbol_id for r in got} - cref)[:5]})
        print(f"[{n}/{len(tasks)}] {task['id']}: {len(caller_rows)} caller targets", file=sys.stderr, flush=True)
    hand = [] if args.search_only else handchecked(args, cache_dir)
    return {"label": args.label, "split": args.split, "tasks": len(tasks), "search": search_rows,
            "offline_round": offline_rows,
            "callers": caller_rows, "callees": callee_rows, "handchecked": hand, "first_call_seconds": first_call}


def handchecked(args: argparse.Namespace, cache_dir: Path) -> list[dict[str, Any]]:
    path = HERE / "codetools_handchecked.json"
    if not path.exists():
        return []
    rows = []
    code_cache: dict[str, set[int]] = {}
    for case in json.loads(path.read_text())["cases"]:
        root = REPOS / case["checkout"] if not case["checkout"].startswith("/") else Path(case["checkout"])
        if case.get("git_archive") and not root.is_dir():  # this repository at a fixed commit
            root.mkdir(parents=True)
            subprocess.run(f"git -C {HERE.parent} archive {case['git_archive']} | tar -x -C {root}",
                           shell=True, check=True)
        engine = RepoMap.open(root, cache_dir=cache_dir)
        code_cache.clear()
        ref = {(p, ln) for p, ln in case["callers"]}
        tool, secs = callers_of(engine, case["symbol"])
        name = case["symbol"].rsplit("::", 1)[1].rsplit(".", 1)[-1]
        rows.append({"symbol": case["symbol"], "checkout": case["checkout"], "language": case["language"],
                     **pr(tool, ref), "non_code": non_code(engine, tool, name, code_cache), "seconds": secs,
                     "missed": sorted(ref - tool)[:8], "extra": sorted(tool - ref)[:8]})
    return rows


# ---------------------------------------------------------------- latency

def latency(root: Path, cache_dir: Path, n: int, seed: int) -> dict[str, Any]:
    """Wall seconds per engine call on one (warm) repository: search, callers, callees.

    The engine is opened twice: the first open indexes (cold cache) and is not
    timed; the second is a warm open, as a long-running worker has. ``first``
    is the first reference query of that engine version (jedi's start-up);
    ``repeat`` asks the same symbols again (the version cache).
    """
    import random

    RepoMap.open(root, cache_dir=cache_dir)
    t0 = time.perf_counter()
    engine = RepoMap.open(root, cache_dir=cache_dir)
    open_s = time.perf_counter() - t0
    rng = random.Random(seed)
    # what a navigator asks about: functions and methods of the code, not of its tests
    code = [p for p in engine.files if p.endswith(".py") and not re.search(r"(^|/)(tests?|idle_test)/|(^|/)test_", p)]
    syms = [s for p in code for s in engine.symbols(p) if s.kind in ("function", "method")]
    picked = rng.sample(syms, min(n, len(syms)))
    words = sorted({w for s in picked for w in re.findall(r"[a-z]{4,}", (s.doc or "").lower())})
    queries = [" ".join(rng.sample(words, min(6, len(words)))) for _ in range(n)]
    out: dict[str, Any] = {"root": str(root), "files": len(engine.files), "open_warm_s": open_s}
    for key, calls in (("search", [(engine.search, q, 10) for q in queries]),
                       ("callers", [(engine.callers, s.id) for s in picked]),
                       ("callers_repeat", [(engine.callers, s.id) for s in picked]),
                       ("callees", [(engine.callees, s.id) for s in picked])):
        out[f"{key}_s"], out[f"{key}_cpu_s"], out[f"{key}_n"] = [], [], []
        for i, (fn, *args) in enumerate(calls):
            got, wall, cpu = timed_cpu(fn, *args)
            out[f"{key}_s"].append(wall)
            out[f"{key}_cpu_s"].append(cpu)
            out[f"{key}_n"].append(len(got))
            print(f"{key} {i + 1}/{len(calls)} {args[0]!r:.80}: {len(got)} results, {wall:.2f} s wall, "
                  f"{cpu:.2f} s cpu", file=sys.stderr, flush=True)
    out["jedi_s"] = engine._references().jedi_seconds
    return out


def latency_text(lat: dict[str, Any]) -> str:
    rows = [f"### latency — {lat['root']} ({lat['files']} indexed files; warm open {lat['open_warm_s']:.2f} s)", "",
            "| call | n | first (wall / cpu) | median (wall / cpu) | p90 (wall / cpu) | max (wall / cpu) |",
            "|---|---|---|---|---|---|"]
    for key in ("search", "callers", "callers_repeat", "callees"):
        xs, cs = lat[f"{key}_s"], lat[f"{key}_cpu_s"]
        rows.append(f"| {key} | {len(xs)} | {xs[0]:.3f} / {cs[0]:.3f} | {statistics.median(xs):.3f} / "
                    f"{statistics.median(cs):.3f} | {_q(xs, 0.9):.3f} / {_q(cs, 0.9):.3f} | {max(xs):.3f} / "
                    f"{max(cs):.3f} |")
    rows.append(f"\njedi time in total: {lat['jedi_s']:.1f} s")
    return "\n".join(rows) + "\n"


# ---------------------------------------------------------------- report

def _q(xs: list[float], p: float) -> float:
    if not xs:
        return 0.0
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p * (len(xs) - 1))))]


def summarize(res: dict[str, Any]) -> str:
    out = [f"## code tools — {res['label']} ({res['split']} split, {res['tasks']} tasks)", ""]
    out += ["### search (top 10)", "", "| query | n | usable | file@1 | file@5 | file@10 | symbol@1 | symbol@5 | "
            "symbol@10 | median s | p90 s |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for kind in ("tool", "goal"):
        rows = [r for r in res["search"] if r["kind"] == kind]
        if not rows:
            continue
        m = lambda key: sum(bool(r[key]) for r in rows) / len(rows)  # noqa: E731
        secs = [r["seconds"] for r in rows]
        out.append(f"| {kind} | {len(rows)} | {sum(r['hits'] > 0 for r in rows) / len(rows):.2f} | "
                   + " | ".join(f"{m(f'{w}@{k}'):.2f}" for w in ("file", "symbol") for k in KS)
                   + f" | {statistics.median(secs):.3f} | {_q(secs, 0.9):.3f} |")
    rows = res.get("offline_round") or []
    if rows:
        secs = [r["seconds"] for r in rows]
        out += ["", "offline model's first-turn tool round (tool activities -> parser -> survey hints): "
                f"usable {sum(r['usable'] for r in rows) / len(rows):.2f}, a changed file focused "
                f"{sum(r['gold_file_focused'] for r in rows) / len(rows):.2f}, a changed line inside an expanded "
                f"definition {sum(r['gold_line_expanded'] for r in rows) / len(rows):.2f}; round seconds median "
                f"{statistics.median(secs):.3f}, p90 {_q(secs, 0.9):.3f}, max {max(secs):.3f}"]
    out += ["", "per repository (tool query): file@10 / symbol@10", ""]
    by_repo: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in res["search"]:
        if r["kind"] == "tool":
            by_repo[r["repo"]].append(r)
    for repo, rows in sorted(by_repo.items()):
        out.append(f"- {repo}: {sum(r['file@10'] for r in rows) / len(rows):.2f} / "
                   f"{sum(r['symbol@10'] for r in rows) / len(rows):.2f}")
    for title, key in (("callers vs jedi get_references (Python)", "callers"),
                       ("callees vs jedi references into the body (Python)", "callees"),
                       ("callers vs hand-checked call sites", "handchecked")):
        rows = res.get(key) or []
        if not rows:
            continue
        tp, tool, ref = (sum(r[k] for r in rows) for k in ("tp", "tool", "ref"))
        secs = [r["seconds"] for r in rows]
        nc = sum(r.get("non_code", 0) for r in rows)
        out += ["", f"### {title}", "",
                f"{len(rows)} targets; micro precision {tp / max(tool, 1):.3f}, recall {tp / max(ref, 1):.3f} "
                f"({tp} of {tool} reported sites right, {tp} of {ref} reference sites found); macro precision "
                f"{statistics.mean(r['precision'] for r in rows):.3f}, recall "
                f"{statistics.mean(r['recall'] for r in rows):.3f}"
                + (f"; non-code hits {nc}" if key != "callees" else "")
                + f"; seconds median {statistics.median(secs):.3f}, p90 {_q(secs, 0.9):.3f}, max {max(secs):.3f}"]
        if key == "callers" and rows and "warm_seconds" in rows[0]:
            warm = [r["warm_seconds"] for r in rows]
            out.append(f"repeated call: median {statistics.median(warm):.4f} s, max {max(warm):.4f} s; "
                       f"first call of an engine version: median {statistics.median(res['first_call_seconds']):.3f}"
                       f" s, max {max(res['first_call_seconds']):.3f} s")
        if key in ("callers", "handchecked"):
            groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
            for r in rows:
                groups[r.get("repo") or r.get("language")].append(r)
            for g, rs in sorted(groups.items()):
                gtp, gtool, gref = (sum(r[k] for r in rs) for k in ("tp", "tool", "ref"))
                out.append(f"- {g}: {len(rs)} targets, precision {gtp / max(gtool, 1):.3f}, recall "
                           f"{gtp / max(gref, 1):.3f}, non-code {sum(r['non_code'] for r in rs)}")
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", type=Path, default=DEFAULT_TASKS)
    ap.add_argument("--split", default="dev", choices=["dev", "test"])
    ap.add_argument("--label", required=True)
    ap.add_argument("--repos", nargs="*")
    ap.add_argument("--targets", type=int, default=8, help="caller targets per Python repository")
    ap.add_argument("--callee-targets", type=int, default=3, help="callee targets per Python repository")
    ap.add_argument("--cache-dir", default="/tmp/codetools-bench-cache")
    ap.add_argument("--config", type=lambda s: EngineConfig.model_validate_json(s), default=EngineConfig(),
                    help="engine config as JSON, e.g. '{\"search\": {\"file_weight\": 2}}' (dev tuning)")
    ap.add_argument("--search-only", action="store_true", help="measure search only (quick)")
    ap.add_argument("--md", action="store_true", help="also write the summary as Markdown")
    ap.add_argument("--summary-only", type=Path, help="re-print the summary of a results JSON")
    ap.add_argument("--latency", type=Path, help="only time search/callers/callees on this repository")
    ap.add_argument("--calls", type=int, default=40, help="symbols/queries timed by --latency")
    args = ap.parse_args()
    if args.latency:
        lat = latency(args.latency, Path(args.cache_dir), args.calls, seed=11)
        out = HERE / "results" / f"codetools-latency-{args.label}.json"
        out.write_text(json.dumps(lat, indent=1, sort_keys=True) + "\n")
        print(latency_text(lat))
        return
    if args.summary_only:
        print(summarize(json.loads(args.summary_only.read_text())))
        return
    if args.split == "test":
        print("note: test split — report only, never tune the tools on it", file=sys.stderr)
    res = run(args)
    out = HERE / "results" / f"codetools-{args.label}-{args.split}.json"
    out.write_text(json.dumps(res, indent=1, sort_keys=True) + "\n")
    text = summarize(res)
    if args.md:
        out.with_suffix(".md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
