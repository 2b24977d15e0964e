"""Warm search latency, keyword vs hybrid: the dev goals of one repository against one warm engine.

Usage: ``PYTHONPATH=. .venv/bin/python bench/search_latency.py OWNER/NAME [--cache-dir DIR]`` (dev split only).
The engine is opened and searched once before timing (the ranker's chunk table and model load),
as a long-running worker has them; then every dev goal of the repository is searched in both modes.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from bench.codetools_precision import DEFAULT_TASKS, _q, checkout, load_tasks
from durable_navigator.repomap import RepoMap


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("repo")
    ap.add_argument("--cache-dir", default="/tmp/codetools-bench-cache")
    args = ap.parse_args()
    tasks = [t for t in load_tasks(DEFAULT_TASKS, "dev") if t["repo"] == args.repo]
    engine = RepoMap.open(checkout(tasks[0]), cache_dir=Path(args.cache_dir))
    engine.search(tasks[0]["goal"], limit=10)  # warm-up: chunk table, model
    for mode in ("keyword", "hybrid"):
        secs = []
        for t in tasks:
            t0 = time.perf_counter()
            engine.search(t["goal"], limit=10, mode=mode)
            secs.append(time.perf_counter() - t0)
        print(f"{args.repo} ({len(engine.files)} files) {mode}: {len(secs)} searches, median "
              f"{statistics.median(secs):.3f} s, p90 {_q(secs, 0.9):.3f} s, max {max(secs):.3f} s")


if __name__ == "__main__":
    main()
