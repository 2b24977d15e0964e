"""What re-validating an index costs: warm open vs ``RepoMap.refresh`` on an unchanged tree.

``python bench/refresh_bench.py ROOT [--cache-dir DIR] [--repeat 15]`` prints one
JSON object: medians (ms) of a warm ``RepoMap.open`` (in-process, cache warm),
of ``refresh()`` on the unchanged tree (must return the same object), of the
discovery alone, of reading + hashing every indexed file (what "hash
everything on every scan" would cost instead of the stat shortcut), and of a
refresh after one file is touched (same content, new ctime: re-hash, no parse)
and after one file is modified (re-parse of that file, new ranking structure).
The touched / modified file is restored afterwards. Run it on a copy (the
stdlib corpus of ``repomap_bench.py``), never on a tree you care about. Figures
depend on the machine's load: ``os.getloadavg()`` is recorded next to them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from durable_navigator.navtypes.flightplan import FlightPlan
from durable_navigator.repomap import RepoMap
from durable_navigator.repomap.build import content_hash
from durable_navigator.repomap.discover import discover


def _median_ms(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return round(statistics.median(times), 1), out


def _hash_all(rm: RepoMap) -> int:
    n = 0
    for rel in rm.files:
        content_hash((rm.root / rel).read_bytes())
        n += 1
    return n


def main(argv: list[str] | None = None) -> int:
    """Measure and print the figures as JSON."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", type=Path)
    ap.add_argument("--cache-dir", type=Path, default=None, help="index cache (default: a fresh temp dir)")
    ap.add_argument("--repeat", type=int, default=15)
    args = ap.parse_args(argv)
    cache = args.cache_dir or Path(tempfile.mkdtemp(prefix="refresh-bench-"))
    t0 = time.perf_counter()
    rm = RepoMap.open(args.root, cache_dir=cache, jobs=2)
    first_ms = (time.perf_counter() - t0) * 1e3
    rm.render(FlightPlan(token_budget=2048, goal="warm up the ranking structure"))
    out: dict[str, Any] = {"root": str(rm.root), "files": len(rm.files), "first_open_ms": round(first_ms, 1),
                           "loadavg_start": os.getloadavg()}
    out["warm_open_ms"], _ = _median_ms(lambda: RepoMap.open(args.root, cache_dir=cache, jobs=2), args.repeat)
    rm = RepoMap.open(args.root, cache_dir=cache, jobs=2)
    out["refresh_unchanged_ms"], same = _median_ms(rm.refresh, args.repeat)
    out["refresh_unchanged_same_object"] = same is rm
    out["discover_ms"], _ = _median_ms(lambda: discover(rm.root, rm.config.discover), args.repeat)
    out["hash_all_indexed_ms"], _ = _median_ms(lambda: _hash_all(rm), max(3, args.repeat // 3))
    victim = rm.root / max(rm.files, key=lambda p: (p.endswith(".py"), -len(p), p))
    data = victim.read_bytes()
    try:
        victim.write_bytes(data)  # same bytes: ctime changes, content does not
        t0 = time.perf_counter()
        touched = rm.refresh()
        out["refresh_after_touch_ms"] = round((time.perf_counter() - t0) * 1e3, 1)
        out["refresh_after_touch_kept_version"] = touched is rm
        victim.write_bytes(data + b"\n# refresh bench\n")
        t0 = time.perf_counter()
        changed = touched.refresh()
        out["refresh_after_modify_ms"] = round((time.perf_counter() - t0) * 1e3, 1)
        t0 = time.perf_counter()
        changed.render(FlightPlan(token_budget=2048, goal="first render of the new version"))
        out["first_render_after_modify_ms"] = round((time.perf_counter() - t0) * 1e3, 1)
    finally:
        victim.write_bytes(data)
    out["loadavg_end"] = os.getloadavg()
    json.dump(out, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
