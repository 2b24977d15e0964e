"""Benchmark: the chunk ranker's chunk store on a large tree, cold and after an edit (issue 28).

1. ``cold``: ``RepoMap.open`` of a fresh cache, then ``repo_chunks``; wall and CPU seconds of this
   process and of its pool workers (``getrusage``: CPU moves far less with other load than wall).
2. ``edit``: the stored chunk blob and parts deleted, ``repo_chunks`` (everything chunked again), then
   one file appended to, 2.2 s waited (past the racy window), the engine reopened and ``repo_chunks``
   timed on that new index version.

Run from a checkout (``python bench/chunk_store_bench.py TREE CACHE --label X``); ``TREE`` e.g. from
``bench/gen_large_tree.py``. It appends to one file of ``TREE`` in the ``edit`` step.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sqlite3
import time
from pathlib import Path

from durable_navigator.repomap.cache import IndexCache
from durable_navigator.repomap.chunkrank import fromengine
from durable_navigator.repomap.engine import RepoMap


def _cpu() -> tuple[float, float]:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime


def cold(root: Path, cache: Path) -> str:
    """Open with a fresh cache, then build the chunk store: wall and CPU of each step."""
    shutil.rmtree(cache, ignore_errors=True)
    w0, (s0, c0) = time.perf_counter(), _cpu()
    engine = RepoMap.open(root, cache_dir=cache)
    w1, (s1, c1) = time.perf_counter(), _cpu()
    fromengine.repo_chunks(engine)
    w2, (s2, c2) = time.perf_counter(), _cpu()
    return (f"open wall {w1 - w0:.1f} s, CPU {s1 - s0:.1f} + workers {c1 - c0:.1f} s; chunk store wall "
            f"{w2 - w1:.1f} s, CPU {s2 - s1:.1f} + workers {c2 - c1:.1f} s; total wall {w2 - w0:.1f} s, "
            f"CPU {s2 - s0 + c2 - c0:.1f} s")


def edit(root: Path, cache: Path) -> str:
    """Everything chunked again from the index, then the store of a new version after a one-file edit."""
    store = IndexCache(cache)
    db = sqlite3.connect(store.path)
    if db.execute("SELECT count(*) FROM sqlite_master WHERE name='parts'").fetchone()[0]:
        with db:
            db.execute("DELETE FROM parts")  # a checkout without the parts table has none to delete
    db.close()
    for blob in store.structures_dir.glob("*.rs"):
        blob.unlink()
    fromengine._CACHE.clear()
    engine = RepoMap.open(root, cache_dir=cache)
    t = time.perf_counter()
    fromengine.repo_chunks(engine)
    again = time.perf_counter() - t
    files = sorted(root.rglob("*.py"))
    if not files:
        raise SystemExit(f"{root} has no .py file to edit; pass a tree with Python files")
    target = files[min(7, len(files) - 1)]
    target.write_text(target.read_text() + f"\ndef edited_at_{time.time_ns()}():\n    return 1\n")
    time.sleep(2.2)
    fromengine._CACHE.clear()
    engine = RepoMap.open(root, cache_dir=cache)
    t = time.perf_counter()
    rc = fromengine.repo_chunks(engine)
    return (f"chunk store with nothing derived {again:.1f} s; after editing one file "
            f"{time.perf_counter() - t:.1f} s ({len(rc.spans)} chunks)")


def main() -> None:
    """Run the steps asked for and print one line each, with the load average."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tree", type=Path)
    ap.add_argument("cache", type=Path, help="emptied by the cold step")
    ap.add_argument("--label", default="")
    ap.add_argument("--steps", nargs="+", choices=("cold", "edit"), default=["cold", "edit"])
    args = ap.parse_args()
    for step in args.steps:
        got = (cold if step == "cold" else edit)(args.tree.resolve(), args.cache)
        print(f"{args.label} {step}: {got}; load {os.getloadavg()[0]:.2f}", flush=True)


if __name__ == "__main__":
    main()
