"""Benchmark: the first exploration of a 20,000-file repository with 50,000 commits of history (issue 28).

``python bench/history_scale.py [--files 20000] [--commits 50000] [--work /work/bench-data/history-scale]
[--runs 3] [--drop-caches]``

Run it on an otherwise idle machine: on 2 CPUs a concurrent benchmark doubles the figure (session 8's
89.8-155 s were measured beside the test-split runs; 44-50 s idle, session 10).

1. A deterministic tree (``gen_large_tree.py``, ``--files``) committed once, then ``--commits``
   commits made with ``git fast-import``: each changes one to three files (chosen with a Zipf-like
   bias, as real churn is), appending a comment line, with a message naming the file's words. The
   work tree is the last commit's.
2. Through the product's default path, as a user runs it: the installed ``navigator explore`` with
   default flags (embedded Temporal started by the command, offline model, ``--tokens 8192``) in
   fresh state and cache folders — the **first** exploration (cold: scan and index every file) —
   then a **second** one in the same folders (warm: an incremental refresh). ``--runs N`` does this
   N times, each in new folders, and reports the median: on this 2-CPU machine one first
   exploration varies by several seconds from run to run (50.8 to 64.2 s for the same code within an
   hour, session 19), so a single run cannot tell a target of 60 s.
3. The learned navigator's history read (``repomap.chunkrank.fromengine.repo_history``: one
   ``git log`` of the newest ``MAX_COMMITS`` commits) timed alone in process, labelled as such:
   the default policy (the learned allocation) reads it inside both explorations above.

Writes ``bench/results/history-scale-<stamp>.{json,md}`` with the machine's load.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _project import compile_bytecode  # noqa: E402
from gen_large_tree import generate  # noqa: E402

_COMMENT = {".py": "#", ".rb": "#", ".yaml": "#", ".yml": "#", ".md": ""}
_SKIP = {".json"}


def _comment(path: str, n: int) -> str | None:
    ext = Path(path).suffix
    if ext in _SKIP:
        return None
    lead = _COMMENT.get(ext, "//")
    return f"{lead} revision {n}\n".lstrip() if lead else f"revision {n}\n"


def build_history(repo: Path, commits: int, seed: int) -> dict[str, float]:
    """``git init`` + the tree as the first commit + ``commits`` generated ones (fast-import)."""
    t0 = time.perf_counter()
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid"}
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True, env=env)
    subprocess.run(["git", "-C", str(repo), "commit", "-q", "-m", "initial tree"], check=True, env=env)
    files = sorted(p for p in subprocess.run(["git", "-C", str(repo), "ls-files", "-z"], check=True,
                                             capture_output=True).stdout.decode().split("\0") if p)
    content = {}
    rng = random.Random(seed)
    hot = [p for p in files if Path(p).suffix not in _SKIP]
    rng.shuffle(hot)
    weights = [1.0 / (i + 1) ** 0.8 for i in range(len(hot))]
    stream = subprocess.Popen(["git", "-C", str(repo), "fast-import", "--quiet", "--done"], stdin=subprocess.PIPE,
                              env=env)
    assert stream.stdin is not None
    out = stream.stdin
    stamp = 1_700_000_000
    for n in range(1, commits + 1):
        touched = set(rng.choices(hot, weights, k=rng.choice((1, 1, 2, 3))))
        words = " ".join(Path(p).stem.replace("_", " ") for p in sorted(touched))
        msg = f"fix {words} (change {n})\n".encode()
        out.write(f"commit refs/heads/main\ncommitter bench <bench@example.invalid> {stamp + n} +0000\n".encode())
        out.write(f"data {len(msg)}\n".encode() + msg)
        if n == 1:
            out.write(b"from refs/heads/main^0\n")
        for p in sorted(touched):
            if p not in content:
                content[p] = (repo / p).read_bytes()
            content[p] += (_comment(p, n) or "").encode()
            out.write(f"M 100644 inline {p}\ndata {len(content[p])}\n".encode() + content[p] + b"\n")
    out.write(b"done\n")
    out.close()
    if stream.wait() != 0:
        raise SystemExit("git fast-import failed")
    subprocess.run(["git", "-C", str(repo), "reset", "-q", "--hard", "main"], check=True)
    subprocess.run(["git", "-C", str(repo), "gc", "-q", "--auto"], check=False)
    count = int(subprocess.run(["git", "-C", str(repo), "rev-list", "--count", "HEAD"], check=True,
                               capture_output=True, text=True).stdout)
    return {"seconds": round(time.perf_counter() - t0, 1), "commits": count, "files": len(files)}


def explore(repo: Path, state: Path, goal: str) -> dict[str, object]:
    """One ``navigator explore`` through the installed CLI (default flags) in ``state``'s folders."""
    env = {**os.environ, "XDG_STATE_HOME": str(state / "state"), "XDG_CACHE_HOME": str(state / "cache"),
           "XDG_CONFIG_HOME": str(state / "config"), "XDG_DATA_HOME": str(state / "data"),
           "NAVIGATOR_IDLE_TIMEOUT_S": "0"}
    nav = Path(sys.executable).with_name("navigator")
    out = state / "out"
    t0 = time.perf_counter()
    proc = subprocess.run([str(nav), "explore", str(repo), goal, "--json", "--out", str(out)], env=env,
                          capture_output=True, text=True, timeout=1800)
    wall = time.perf_counter() - t0
    got: dict[str, object] = {"seconds": round(wall, 1), "exit": proc.returncode}
    if proc.returncode != 0:
        got["stderr"] = proc.stderr[-2000:]
        return got
    data = json.loads(proc.stdout)
    got.update({k: data.get(k) for k in ("workflow_id", "iterations", "stop_reason") if k in data})
    return got


def history_read(repo: Path) -> dict[str, float]:
    """The learned navigator's history read alone, in process (labelled; the default policy reads it too)."""
    from durable_navigator.repomap.chunkrank.fromengine import repo_history
    from durable_navigator.repomap.chunkrank.history import MAX_COMMITS

    t0 = time.perf_counter()
    hist = repo_history(repo)
    return {"seconds": round(time.perf_counter() - t0, 2), "max_commits": MAX_COMMITS,
            "read": 0 if hist is None else int(hist.n)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--files", type=int, default=20_000)
    ap.add_argument("--commits", type=int, default=50_000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--work", type=Path, default=Path("/work/bench-data/history-scale"))
    ap.add_argument("--goal", default="fix the retry backoff of the payment service client")
    ap.add_argument("--results", type=Path, default=HERE / "results")
    ap.add_argument("--runs", type=int, default=3,
                    help="first + second explorations this many times, each in fresh folders; the median is reported")
    ap.add_argument("--drop-caches", action="store_true",
                    help="empty the kernel's page cache before the first exploration (root only): the repository, "
                         "the venv and git's objects are then read from disk, as after a reboot")
    args = ap.parse_args(argv)
    if args.runs < 1:
        raise SystemExit(f"--runs {args.runs}: give at least 1")
    if args.drop_caches and not os.access("/proc/sys/vm/drop_caches", os.W_OK):
        raise SystemExit("--drop-caches needs root (it writes /proc/sys/vm/drop_caches); run as root or leave it out")
    repo = args.work / f"repo-{args.files}-{args.commits}"
    built: dict[str, float] = {}
    if not (repo / ".git").exists():
        shutil.rmtree(repo, ignore_errors=True)
        repo.mkdir(parents=True)
        t0 = time.perf_counter()
        generate(repo, args.files, args.seed)
        built["tree_seconds"] = round(time.perf_counter() - t0, 1)
        built.update(build_history(repo, args.commits, args.seed))
    bytecode = compile_bytecode()
    each: list[dict[str, dict[str, object]]] = []
    for _ in range(args.runs):
        state = Path(tempfile.mkdtemp(prefix="history-scale-", dir=args.work))
        if args.drop_caches:
            os.sync()
            Path("/proc/sys/vm/drop_caches").write_text("3\n")
        got = {"first": explore(repo, state, args.goal)}
        got["second"] = explore(repo, state, args.goal)
        shutil.rmtree(state, ignore_errors=True)
        each.append(got)
    # the run whose first exploration is the median one (all of them listed beside it)
    ok = all(r[k]["exit"] == 0 for r in each for k in ("first", "second"))
    runs = sorted(each, key=lambda r: float(r["first"]["seconds"]))[(len(each) - 1) // 2] if ok else \
        next(r for r in each if r["first"]["exit"] != 0 or r["second"]["exit"] != 0)
    result = {"files": args.files, "commits": args.commits, "built": built, "runs": runs, "all_runs": each,
              "bytecode": bytecode,
              "history_read_in_process": history_read(repo), "load_avg": os.getloadavg(),
              "page_cache_dropped": args.drop_caches,
              "cpus": os.cpu_count(), "stamp": time.strftime("%Y%m%d-%H%M%S")}
    args.results.mkdir(parents=True, exist_ok=True)
    base = args.results / f"history-scale-{result['stamp']}"
    base.with_suffix(".json").write_text(json.dumps(result, indent=1))
    first, second = runs["first"], runs["second"]
    md = [f"# First exploration of a {args.files:,}-file repository with {args.commits:,} commits "
          f"({time.strftime('%Y-%m-%d %H:%M')})", "",
          f"`python bench/history_scale.py --files {args.files} --commits {args.commits}"
          f"{' --drop-caches' if args.drop_caches else ''}`; {os.cpu_count()} CPUs, "
          f"load average at the end {result['load_avg'][0]:.1f}. The installed `navigator explore REPO GOAL --json`, "
          "default flags (embedded Temporal started by the command, offline model, 8,192 tokens), fresh state "
          "and cache folders." + (" The kernel's page cache was emptied before the first exploration "
                                    "(`--drop-caches`): the repository, the venv and git's objects came from disk."
                                    if args.drop_caches else ""), "",
          f"{len(each)} run(s), each a first and a second exploration in new state and cache folders; the "
          "table shows the run with the median first exploration, every run is listed below it.", "",
          "| run | seconds | exit | target |", "|---|---|---|---|",
          f"| first exploration (cold: scan + index every file) | {first['seconds']} | {first['exit']} | <= 60 |",
          f"| second exploration (warm: incremental refresh) | {second['seconds']} | {second['exit']} | — |", "",
          "Every run, first / second (s): " + ", ".join(f"{r['first']['seconds']} / {r['second']['seconds']}"
                                                       for r in each) + ".", "",
          f"In process, labelled: the learned navigator's history read (`repo_history`, newest "
          f"{result['history_read_in_process']['max_commits']:,} commits) took "
          f"{result['history_read_in_process']['seconds']} s; the default policy reads it inside each exploration.", ""]
    if built:
        md.append(f"Building the repository (not timed as the product): tree {built.get('tree_seconds')} s, "
                  f"history {built.get('seconds')} s ({built.get('commits'):,} commits).")
    base.with_suffix(".md").write_text("\n".join(md) + "\n")
    print(json.dumps(result, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
