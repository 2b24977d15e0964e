"""Cold index + first map: ``repo-map generate`` (this venv, and optionally another venv's) against
aider's cold repo map, interleaved in one session (issue 17, "cold ≥ 5× faster than aider").

    .venv/bin/python bench/cold_vs_aider.py ROOT [--rounds 2] [--before-bin OTHER_VENV/bin]
        [--aider-python /work/bench-data/perf/aider-venv/bin/python] [--label NAME]

Each round runs every contender once, in a shuffled order, so the (shared machine's) load
falls on all alike. Every sample is a new process timed from ``subprocess.run`` to its exit,
with its CPU seconds (user + system of it and everything it waited for: our index workers)
and the load average before it:

* ours: ``repo-map generate ROOT --goal GOAL --cache-dir <new empty dir>`` (default jobs),
  i.e. discovery, the parallel cold index, the ranking structure and the first map;
* aider: ``bench/aider_harness.py --mode cold`` in aider's venv (its tags cache, written into
  ROOT, deleted before and after): the whole process, and aider's own ``start_to_first_map_s``
  (constructor + first map, imports excluded) and first-map CPU as the harness reports them.

ROOT must be a copy aider may write into (``repomap_bench.py`` makes ``<data>/stdlib``).
Writes ``bench/results/cold-vs-aider[-LABEL]-<stamp>.json`` and prints one line per sample
plus the medians and ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from collections.abc import Callable
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
BIN = Path(sys.executable).parent
GOAL = "why does json.dumps call JSONEncoder.default for objects it cannot serialize?"
AIDER_CACHE_DIR = ".aider.tags.cache.v4"


def _timed(cmd: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    load = os.getloadavg()
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, env=env)
    wall = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr.decode()[-800:]}")
    return {"wall_s": wall, "cpu_s": r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime,
            "load_before": load, "load_after": os.getloadavg()}


def _ours(bin_dir: Path, root: Path, work: Path, tag: str, n: int) -> dict[str, Any]:
    cache = work / f"cache-{tag}-{n}"
    got = _timed([str(bin_dir / "repo-map"), "generate", str(root), "--goal", GOAL, "--cache-dir", str(cache)])
    shutil.rmtree(cache, ignore_errors=True)
    return got


def aider_run(python: Path, root: Path, work: Path, n: int, mode: str = "cold",
              keep_cache: bool = False) -> dict[str, Any]:
    """One aider process (``aider_harness.py --mode cold|warm``) on ``root``, timed; a cold run's
    cache is removed afterwards unless ``keep_cache``."""
    reqs = work / "requests.json"
    if not reqs.exists():
        reqs.write_text(json.dumps([{"id": 0, "goal": GOAL, "map_tokens": 4096, "chat_files": [],
                                     "mentioned_fnames": [], "mentioned_idents": []}]))
    out = work / f"aider-{n}.json"
    got = _timed([str(python), str(REPO / "bench" / "aider_harness.py"), "--root", str(root), "--mode", mode,
                  "--requests", str(reqs), "--max-requests", "0", "--out", str(out)])
    if mode == "cold" and not keep_cache:
        # aider writes its cache into ROOT; remove it so every contender indexes the same tree
        # (left there, the next cold ``repo-map generate`` would read and hash its 8 MB too)
        shutil.rmtree(root / AIDER_CACHE_DIR, ignore_errors=True)
    doc = json.loads(out.read_text())
    got["aider_start_to_first_map_s"] = doc["start_to_first_map_s"]
    got["aider_first_map_cpu_s"] = doc["first"]["cpu_s"]
    got["aider_version"] = doc.get("aider_version")
    return got


def arg_parser(doc: str, rounds: int, seed: int) -> argparse.ArgumentParser:
    """The options both aider comparisons take."""
    p = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    p.add_argument("root", type=Path)
    p.add_argument("--rounds", type=int, default=rounds)
    p.add_argument("--before-bin", type=Path, default=None, help="another venv's bin/ (the 'before' engine)")
    p.add_argument("--aider-python", type=Path, default=Path("/work/bench-data/perf/aider-venv/bin/python"))
    p.add_argument("--label", default="")
    p.add_argument("--seed", type=int, default=seed)
    p.add_argument("--out", type=Path, default=RESULTS)
    return p


def run_rounds(args: argparse.Namespace, contenders: list[str], one: Callable[[str, int], dict[str, Any]],
               digits: int) -> tuple[dict[str, list[dict[str, Any]]], list[str]]:
    """``args.rounds`` rounds, each running every contender once (``one(who, round)``) in a shuffled
    order; the samples per contender and the lines printed."""
    rng = random.Random(args.seed)
    samples: dict[str, list[dict[str, Any]]] = {c: [] for c in contenders}
    lines = []
    for n in range(args.rounds):
        order = contenders[:]
        rng.shuffle(order)
        for who in order:
            s = one(who, n)
            samples[who].append(s)
            extra = (f", aider's own start→first map {s['aider_start_to_first_map_s']:.2f} s"
                     + (f" / {s['aider_first_map_cpu_s']:.2f} CPU-s" if "aider_first_map_cpu_s" in s else "")
                     if who == "aider" else "")
            line = (f"round {n} {who}: wall {s['wall_s']:.{digits}f} s, CPU {s['cpu_s']:.{digits}f} s, "
                    f"load {s['load_before'][0]:.2f}{extra}")
            lines.append(line)
            print(line, flush=True)
    return samples, lines


def summarize(args: argparse.Namespace, kind: str, samples: dict[str, list[dict[str, Any]]], lines: list[str],
              digits: int) -> None:
    """Print and write the medians per contender (aider's own start→first map and first-map CPU too)
    and, per engine, aider's medians divided by its: ``bench/results/<kind>[-LABEL]-<stamp>.json``
    (or under ``--out``), with the engine revision."""
    med = {who: {"wall_s": statistics.median(x["wall_s"] for x in v), "cpu_s": statistics.median(x["cpu_s"] for x in v)}
           for who, v in samples.items()}
    aider = med["aider"]
    aider["start_to_first_map_s"] = statistics.median(x["aider_start_to_first_map_s"] for x in samples["aider"])
    if all("aider_first_map_cpu_s" in x for x in samples["aider"]):
        aider["first_map_cpu_s"] = statistics.median(x["aider_first_map_cpu_s"] for x in samples["aider"])
    ratios = {who: {"wall_process": aider["wall_s"] / m["wall_s"], "cpu_process": aider["cpu_s"] / m["cpu_s"],
                    "aider_own_first_map_vs_our_process_wall": aider["start_to_first_map_s"] / m["wall_s"]}
              for who, m in med.items() if who != "aider"}
    for who, r in ratios.items():
        line = (f"median {who}: wall {med[who]['wall_s']:.{digits}f} s, CPU {med[who]['cpu_s']:.{digits}f} s; "
                f"aider process {aider['wall_s']:.2f} s / {aider['cpu_s']:.2f} CPU-s → aider/ours wall "
                f"{r['wall_process']:.2f}×, CPU {r['cpu_process']:.2f}× (aider's own start→first map "
                f"{aider['start_to_first_map_s']:.2f} s: {r['aider_own_first_map_vs_our_process_wall']:.2f}×)")
        lines.append(line)
        print(line)
    _write_result(args, kind, {"samples": samples, "medians": med, "ratios": ratios, "summary": lines})


def _write_result(args: argparse.Namespace, kind: str, doc: dict[str, Any]) -> None:
    rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"{kind}{'-' + args.label if args.label else ''}-{stamp}.json"
    out.write_text(json.dumps({"root": str(args.root), "engine": rev.stdout.strip(), "before_bin": str(args.before_bin),
                               "goal": GOAL, "rounds": args.rounds, "cpus": os.cpu_count(), **doc}, indent=1,
                              default=str))
    print(f"-> {out.relative_to(REPO) if out.is_relative_to(REPO) else out}")


def main(argv: list[str] | None = None) -> int:
    args = arg_parser(__doc__, rounds=2, seed=20).parse_args(argv)
    contenders = ["after", "aider"] + (["before"] if args.before_bin else [])
    with tempfile.TemporaryDirectory(prefix="cold-vs-aider-") as tmp:
        work = Path(tmp)

        def one(who: str, n: int) -> dict[str, Any]:
            if who == "aider":
                return aider_run(args.aider_python, args.root, work, n)
            return _ours(BIN if who == "after" else args.before_bin, args.root, work, who, n)

        samples, lines = run_rounds(args, contenders, one, 2)
    summarize(args, "cold-vs-aider", samples, lines, 2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
